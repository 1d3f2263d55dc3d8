#!/usr/bin/env bash
# eco measure end to end on the CPU backend: without a meter (energy null with a reason) and with the fake
# libnvidia-ml (energy from the counter), energy.json validated, report rendered, replication imported.
set -euo pipefail
ECO=${ECO_BIN:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Reads all of its input before matching: `cmd | grep -q` can exit on the first match while cmd still writes,
# and the SIGPIPE that kills cmd fails the whole pipeline under pipefail (a flaky test).
has() { local text; text=$(cat); grep -q "$@" <<< "$text"; }
json() { EXPR="$2" node -e "const d=JSON.parse(require('fs').readFileSync(process.argv[1],'utf8')); if(!eval(process.env.EXPR)){console.error('assertion failed: '+process.env.EXPR); process.exit(1)}" "$1"; }

"$ECO" model save tiny --out "$T/tiny" --seed 3 >/dev/null
# each option once (eco refuses one given twice): `run` is the settings without the weights, `common` with them
run=(--backend cpu --tokens 16 --blocks 3 --warmups 1 --prompt-tokens 4 --quality-tokens 16 --quiet)
common=(--weights "$T/tiny" "${run[@]}" --window 0.2)

# 0. What the end of a run needs is checked before it starts (usage errors, nothing measured): an output in a
# missing folder or that is a folder, no quantized precision, an unknown backend.
preflight_raw() { set +e; "$ECO" measure "$@" > /dev/null 2> "$T/pre.err"; local rc=$?; set -e; [ $rc -eq 2 ] || fail "measure $* exited $rc"; }
preflight() { preflight_raw "${common[@]}" "$@"; }
preflight --precisions fp16,int8 --out "$T/no/such/x.json"
grep -q "no folder $T/no/such" "$T/pre.err" || fail "missing folder: $(cat "$T/pre.err")"
preflight --precisions fp16,int8 --out "$T" --report "$T/r.md"
grep -q 'is a folder' "$T/pre.err" || fail "folder as output: $(cat "$T/pre.err")"
preflight --precisions fp16,int8 --out "$T/ok.json" --report "$T/no/r.md"
preflight --precisions ""
grep -q 'no quantized precision' "$T/pre.err" || fail "empty precisions: $(cat "$T/pre.err")"
preflight_raw --weights "$T/tiny" --precisions fp16,int8 --backend gpu
[ ! -e "$T/ok.json" ] || fail "a refused run wrote its output"

# 1. No meter: every energy is null with a reason; speed and quality are still measured.
"$ECO" measure "${common[@]}" --idle 0 --precisions fp16,int8,int8-mixed,nf4,fp8 --out "$T/cpu.json" --report "$T/cpu.md"
"$ECO" validate "$T/cpu.json" >/dev/null || fail "cpu energy.json does not validate"
json "$T/cpu.json" "d.results.length===5 && d.results[0].precision==='fp16' && d.meter.basis==='unavailable'"
json "$T/cpu.json" "d.results.every(r => r.mj_per_token_gross===null && r.energy_unavailable_reason.includes('no energy meter') && r.tokens_per_s>0 && r.n===3)"
json "$T/cpu.json" "d.comparisons.length===4 && d.comparisons.every(c => c.verdict==='unavailable' && c.delta_pct===null)"
json "$T/cpu.json" "d.results[0].quality.kl_to_fp16===0 && d.results[0].quality.top1_agreement===1"
json "$T/cpu.json" "d.results[3].precision==='nf4' && d.results[3].quality.kl_to_fp16 > d.results[1].quality.kl_to_fp16"
json "$T/cpu.json" "d.windows.length===15 && d.protocol.blocks===3 && d.protocol.order==='interleaved-random'"
grep -q "energy unavailable" "$T/cpu.md" || fail "report does not say energy is unavailable"
# The checkpoint is named by its config (not the local path), identified by a hash of its files' manifest
# (sha256sum's format), and its synthetic values are disclosed.
manifest=$(cd "$T/tiny" && sha256sum $(ls config.json *.safetensors* | LC_ALL=C sort) | sha256sum | cut -d' ' -f1)
json "$T/cpu.json" "d.weights.model==='tiny' && d.weights.source==='checkpoint' && d.weights.checkpoint_sha256==='$manifest'"
json "$T/cpu.json" "d.notes.some(n => n.includes('synthetic weights written by eco model save (seed 3)'))"
# without a hub id in its config, a checkpoint is named by its folder, however the path is spelled
mkdir "$T/my-model" && cp "$T/tiny/"* "$T/my-model/"
node -e 'const f=process.argv[1],d=JSON.parse(require("fs").readFileSync(f));delete d._name_or_path;require("fs").writeFileSync(f,JSON.stringify(d))' "$T/my-model/config.json"
(cd "$T/my-model" && "$ECO" measure "${run[@]}" --window 0.2 --weights . --idle 0 --precisions fp16,int8 --out "$T/named.json" --report "$T/named.md")
json "$T/named.json" "d.weights.model==='my-model' && d.run_id.startsWith('my-model-')"
# a folder name past the schema's 128-character run_id is cut in the id (the run is not lost at the end)
long=$(printf 'm%.0s' $(seq 1 150)) && mkdir "$T/$long" && cp "$T/my-model/"* "$T/$long/"
"$ECO" measure "${run[@]}" --window 0.2 --weights "$T/$long" --idle 0 --precisions fp16,int8 --out "$T/long.json" || fail "a long checkpoint name"
json "$T/long.json" "d.run_id.length<=128 && d.run_id.startsWith('mmmm') && /-cpu-\\d{8}T\\d{6}Z$/.test(d.run_id)"

# 2. Fake NVML (scripted constant 150 W): the counter path end to end.
ECO_NVML_LIBRARY="$ECO_BINARY_DIR/tests/libfake_nvml.so" ECO_FAKE_NVML_POWER=const:150 \
  "$ECO" measure "${common[@]}" --idle 0.3 --meter nvml --precisions fp16,nf4 --out "$T/fake.json" --report "$T/fake.md"
"$ECO" validate "$T/fake.json" >/dev/null || fail "fake-meter energy.json does not validate"
json "$T/fake.json" "d.meter.basis==='measured' && d.meter.method==='nvml-energy-counter' && d.environment.gpu.name.includes('fake')"
json "$T/fake.json" "Math.abs(d.idle.before_w-150)<3 && d.results.every(r => r.mj_per_token_gross>0 && r.cv_pct!==null)"
json "$T/fake.json" "d.comparisons[0].precision==='nf4' && typeof d.comparisons[0].delta_pct==='number' && d.comparisons[0].ci95_pct.length===2"
json "$T/fake.json" "d.notes.some(n => n.includes('test of the harness'))"
json "$T/fake.json" "d.weights.quantization.lm_head==='fp16' && !('int8_mixed_threshold' in d.weights.quantization)"
# At constant power, energy per token is power x time per token. The speed counts decode time only, the energy also
# the host's gaps between generations, which grow when the machine is busy (a parallel ctest under ASan once made
# them over 25%): at least 75% of 150 W over the speed, at most 150 W over the windows' whole time (plus 5% for
# the prefill sub-windows' edges).
json "$T/fake.json" "d.results.every(r => { const ws = d.windows.filter(w => w.precision === r.precision);
  const wall = 150000 * ws.reduce((a, w) => a + w.seconds, 0) / ws.reduce((a, w) => a + w.tokens, 0);
  return ws.length > 0 && r.mj_per_token_gross > 0.75 * 150000 / r.tokens_per_s && r.mj_per_token_gross < 1.05 * wall; })"
"$ECO" report "$T/fake.json" | has "NVIDIA H200 (fake NVML)" || fail "report lacks the GPU"
json "$T/fake.json" "d.windows.every(w => w.sm_mhz_min===1980 && w.sm_mhz_mean===1980 && w.clock_event_reasons==='none') && !d.flags.includes('throttled')"
# 2b. A power cap that comes and goes inside the windows is recorded per window, flagged and reported.
ECO_NVML_LIBRARY="$ECO_BINARY_DIR/tests/libfake_nvml.so" ECO_FAKE_NVML_POWER=const:150 ECO_FAKE_NVML_THROTTLE=100:0.3:1410:4 \
  "$ECO" measure "${common[@]}" --idle 0.3 --meter nvml --precisions fp16,nf4 --out "$T/capped.json" --report "$T/capped.md"
"$ECO" validate "$T/capped.json" >/dev/null || fail "capped energy.json does not validate"
json "$T/capped.json" "d.windows.every(w => w.sm_mhz_min===1410 && w.sm_mhz_mean>1410 && w.sm_mhz_mean<1980 && w.clock_event_reasons.includes('sw_power_cap'))"
json "$T/capped.json" "d.results.every(r => r.flags.includes('throttled'))"
grep -q "SM clock in the windows: fp16 min 1410" "$T/capped.md" || fail "report lacks the clocks in the windows"
grep -q "clock events: sw_power_cap" "$T/capped.md" || fail "report lacks the power cap"
# A CPU-backend run under a metered GPU is a test of the harness: no dataset rows from it. The import path is
# tested with the same document relabelled as a GPU run.
set +e
"$ECO" import --db "$T/harness.db" --run "$T/capped.json" > /dev/null 2> "$T/harness.err"; rc=$?
set -e
[ $rc -ne 0 ] && grep -q "a test of the harness, not a GPU measurement" "$T/harness.err" || fail "a CPU-backend run became rows: $(cat "$T/harness.err")"
as_gpu_run() { node -e 'const f=process.argv[1],d=JSON.parse(require("fs").readFileSync(f));d.software.engine_backend="cuda";require("fs").writeFileSync(f,JSON.stringify(d))' "$1"; }
as_gpu_run "$T/capped.json"
# Imported as a run, its row keeps the flags of its result and of the fp16 baseline (every ΔE of the run leans on it).
"$ECO" import --db "$T/capped.db" --run "$T/capped.json" >/dev/null || fail "capped run import failed"
"$ECO" export --db "$T/capped.db" --format json | node -e 'const r=JSON.parse(require("fs").readFileSync(0));const x=(r.records||r)[0];
  if (!(x.flags||"").split(" ").includes("throttled") || !(x.flags||"").split(" ").includes("fp16:throttled")) { console.error("flags: "+x.flags); process.exit(1); }' \
  || fail "a throttled run's row lost its flags"

"$ECO" report "$T/fake.json" | has "Engine design" && fail "a CPU run's report names a CUDA kernel design"
# A GPU run's report names the kernel design it measured (software.engine_design).
H200="$ECO_SOURCE_DIR/data/h200/h200_llama-3.1-8b.energy.json"
DESIGN=$(node -e 'const d=JSON.parse(require("fs").readFileSync(process.argv[1]));process.stdout.write(d.software.engine_design||"")' "$H200")
case "$DESIGN" in graph*) ;; *) fail "h200 energy.json has no engine_design ('$DESIGN')";; esac
"$ECO" report "$H200" | has -F -- "- Engine design: $DESIGN" || fail "report lacks the engine design"
# A document whose ΔE contradicts its results is still rendered, under a banner, and exits 1.
node -e 'const d=JSON.parse(require("fs").readFileSync(process.argv[1]));d.comparisons[0].delta_pct=50;process.stdout.write(JSON.stringify(d))' "$H200" > "$T/contra.json"
set +e
"$ECO" report "$T/contra.json" > "$T/contra.md" 2>/dev/null; rc=$?
set -e
[ $rc -eq 1 ] || fail "report of a contradicting document exited $rc"
head -1 "$T/contra.md" | has "Not a valid energy.json: 2 problems" || fail "report banner: $(head -2 "$T/contra.md")"
grep -q '/comparisons/0/delta_pct' "$T/contra.md" || fail "report banner lacks the pointer"

# 2d. Checked before the run: the run id's characters, positions the model has, one file for two outputs however
# spelled, an explicit tokenizer that cannot serve.
preflight --precisions fp16,int8 --run-id 'a/b c'
grep -q -- "--run-id must be 1-128 of" "$T/pre.err" || fail "run-id: $(cat "$T/pre.err")"
preflight_raw --weights "$T/tiny" --backend cpu --precisions fp16,int8 --quality-tokens 600
grep -q "takes 512 positions (max_position_embeddings)" "$T/pre.err" || fail "quality tokens past max_pos: $(cat "$T/pre.err")"
(cd "$T" && preflight --precisions fp16,int8 --out same.json --report ./same.json)
grep -q "must be two different files" "$T/pre.err" || fail "same file spelled twice: $(cat "$T/pre.err")"
preflight --precisions fp16,int8 --tokenizer "$T/no-such-tokenizer.json" --out "$T/tk.json" --report "$T/tk.md"
grep -q -- "--tokenizer: " "$T/pre.err" && [ ! -e "$T/tk.json" ] || fail "missing tokenizer: $(cat "$T/pre.err")"
# a report that cannot be written is an error, and the energy.json already there is whole (written by rename)
cp "$T/fake.json" "$T/keep.json"
set +e; "$ECO" measure "${common[@]}" --precisions fp16,int8 --out "$T/keep.json" --report /dev/full 2> "$T/full.err"; rc=$?; set -e
[ $rc -ne 0 ] && grep -q "cannot write /dev/full" "$T/full.err" || fail "report to a full disk: rc $rc, $(cat "$T/full.err")"
"$ECO" validate "$T/keep.json" > /dev/null || fail "energy.json not whole after a failed report"
# a folder's tokenizer.json that cannot serve is said on stderr and in the quality text's name
mkdir "$T/badtok" && cp "$T/tiny/"* "$T/badtok/" && echo '{"model": {"type": "Unigram"}}' > "$T/badtok/tokenizer.json"
"$ECO" measure "${run[@]}" --window 0.2 --weights "$T/badtok" --idle 0 --precisions fp16,int8 --out "$T/badtok.json" --report "$T/badtok.md" 2> "$T/badtok.err"
grep -q "warning: $T/badtok/tokenizer.json not used" "$T/badtok.err" || fail "no tokenizer warning: $(cat "$T/badtok.err")"
json "$T/badtok.json" "d.results[1].quality.text_name.includes('tokenizer.json could not be used')"
# a regular file whose new version cannot be written whole (file-size limit) keeps its old version, and no
# temporary file is left behind
cp "$T/keep.json" "$T/keep.before"
set +e; (trap '' XFSZ; ulimit -f 4; "$ECO" measure "${common[@]}" --precisions fp16,int8 --out "$T/keep.json" --report "$T/keep.md" 2> "$T/fsz.err"); rc=$?; set -e
[ $rc -ne 0 ] && grep -q "cannot write $T/keep.json" "$T/fsz.err" || fail "write past the size limit: rc $rc, $(cat "$T/fsz.err")"
cmp -s "$T/keep.json" "$T/keep.before" || fail "the old energy.json changed after a failed write"
ls -a "$T" | has '^\.keep\.json\.' && fail "a temporary file was left behind"

# 2e. Windows last at least --window; an idle power that moved during the run is flagged; a metered run needs an idle.
ECO_NVML_LIBRARY="$ECO_BINARY_DIR/tests/libfake_nvml.so" ECO_FAKE_NVML_POWER=steps:0=100,2.5=150 \
  "$ECO" measure --weights "$T/tiny" "${run[@]}" --idle 0.3 --window 0.3 --meter nvml --precisions fp16,int8 --out "$T/drift.json" --report "$T/drift.md"
json "$T/drift.json" "d.windows.every(w => w.seconds >= 0.3) && d.flags.includes('idle-drift') && d.idle.after_w > 1.3 * d.idle.before_w"
preflight --precisions fp16,int8 --meter nvml --idle 0
grep -q -- "--idle must be > 0 s with an energy meter" "$T/pre.err" || fail "idle 0 with a meter: $(cat "$T/pre.err")"

# 2c. --double-quant measures nf4 as nf4-dq and says so; the formats' settings are recorded and reported; a run
# at another LLM.int8() threshold does not join the dataset's int8-mixed rows.
preflight --precisions fp16,int8 --double-quant
grep -q "applies to nf4, which --precisions does not list" "$T/pre.err" || fail "double-quant without nf4: $(cat "$T/pre.err")"
preflight --precisions fp16,nf4,nf4-dq --double-quant
grep -q "lists already" "$T/pre.err" || fail "double-quant with nf4-dq: $(cat "$T/pre.err")"
preflight --precisions fp16,nf4 --reference-stack
grep -q "the cpu backend has none" "$T/pre.err" || fail "reference-stack on cpu: $(cat "$T/pre.err")"
ECO_NVML_LIBRARY="$ECO_BINARY_DIR/tests/libfake_nvml.so" ECO_FAKE_NVML_POWER=const:150 \
  "$ECO" measure "${common[@]}" --idle 0.2 --meter nvml --precisions fp16,nf4,int8-mixed --double-quant --int8-threshold 4 \
  --out "$T/dq.json" --report "$T/dq.md"
json "$T/dq.json" "d.comparisons.map(c => c.precision).join()==='nf4-dq,int8-mixed' && d.results[1].precision==='nf4-dq'"
json "$T/dq.json" "d.weights.quantization.int8_mixed_threshold===4 && d.weights.quantization.lm_head==='fp16'"
json "$T/dq.json" "d.comparisons.every(c => c.method==='paired-t-blocks' && !('bootstrap_resamples' in c))"
grep -q "Quantization: LLM.int8() threshold 4; lm_head fp16" "$T/dq.md" || fail "report lacks the quantization settings"
grep -q "synthetic values of the real shapes" "$T/dq.md" && fail "a checkpoint run's report says synthetic"
as_gpu_run "$T/dq.json"
set +e
"$ECO" import --db "$T/dq.db" --run "$T/dq.json" > /dev/null 2> "$T/dq.err"; rc=$?
set -e
[ $rc -ne 0 ] && grep -q "LLM.int8() at threshold 6.0 with an fp16 lm_head; this run used threshold 4" "$T/dq.err" || fail "threshold-4 run imported: $(cat "$T/dq.err")"

# 2b. A counter that never moves fails the self-test: the run still completes, energy null, basis "failed".
ECO_NVML_LIBRARY="$ECO_BINARY_DIR/tests/libfake_nvml.so" ECO_FAKE_NVML_POWER=const:150 ECO_FAKE_NVML_COUNTER_MS=100000 \
  "$ECO" measure "${common[@]}" --idle 0.2 --meter nvml --precisions fp16,nf4 --out "$T/failed.json" --report "$T/failed.md" 2> "$T/failed.err"
grep -q "^\[self-test\] energy meter self-test failed" "$T/failed.err" || fail "--quiet hid the failed self-test: $(cat "$T/failed.err")"
"$ECO" validate "$T/failed.json" >/dev/null || fail "failed-self-test energy.json does not validate"
json "$T/failed.json" "d.meter.basis==='failed' && d.meter.failure.includes('self-test failed') && d.flags.includes('counter-check-failed')"
json "$T/failed.json" "d.results.every(r => r.basis==='failed' && r.mj_per_token_gross===null && r.energy_unavailable_reason.includes('self-test'))"
if "$ECO" import --db "$T/eco.db" --run "$T/failed.json" 2>/dev/null; then fail "a failed run became dataset rows"; fi

# 3. The document is accepted as a replication, and as a run whose rows join the dataset (idempotently).
as_gpu_run "$T/fake.json"
"$ECO" import --db "$T/eco.db" "$T/fake.json" >/dev/null || fail "replication import failed"
"$ECO" import --db "$T/eco.db" --run "$T/fake.json" | has "1 row(s), 1 new" || fail "run import did not add its row"
"$ECO" import --db "$T/eco.db" --run "$T/fake.json" | has "1 row(s), 0 new" || fail "run re-import was not idempotent"
"$ECO" export --db "$T/eco.db" --format csv > "$T/export0.csv"
grep -q "nvml-energy-counter" "$T/export0.csv" || fail "run row not exported"
# A GPU run's rows name the kernel design they were measured with.
"$ECO" import --db "$T/eco.db" --run "$ECO_SOURCE_DIR/data/h200/h200_llama-3.1-8b.energy.json" >/dev/null || fail "H200 run import failed"
"$ECO" export --db "$T/eco.db" --format csv > "$T/export.csv" # whole, not cut by an early grep -q under pipefail
grep "Llama-3.1-8B" "$T/export.csv" | has "kernels: graph+PDL" || fail "run rows lack the kernel design"
# Two runs in files of one name (every run's default is energy.json) are two runs; a run id past 63 characters is
# kept whole (a cut one had merged two runs: the second overwrote the first's row)
mkdir -p "$T/ra" "$T/rb"
cp "$ECO_SOURCE_DIR/data/h200/h200_llama-3.1-8b.session13.energy.json" "$T/ra/energy.json"
cp "$ECO_SOURCE_DIR/data/h200/h200_llama-3.1-8b.session14.energy.json" "$T/rb/energy.json"
node -e 'const fs=require("fs");for(const [f,s] of [[process.argv[1],"first"],[process.argv[2],"second"]]){const d=JSON.parse(fs.readFileSync(f));d.run_id="A".repeat(63)+s;fs.writeFileSync(f+".long.json",JSON.stringify(d))}' "$T/ra/energy.json" "$T/rb/energy.json"
for f in "$T/ra/energy.json" "$T/rb/energy.json" "$T/ra/energy.json.long.json" "$T/rb/energy.json.long.json"; do
  db="$T/runs.db" && case "$f" in *long*) db="$T/long.db";; esac # the same measurement under two ids is refused
  "$ECO" import --db "$db" --run "$f" | has "1 row(s), 1 new" || fail "run $f was not stored as a new run"
done
for db in runs long; do
  [ "$(sqlite3 "$T/$db.db" "SELECT count(DISTINCT session) || ' ' || count(*) FROM records WHERE origin = 'run'")" = "2 2" ] || fail "runs merged: $(sqlite3 "$T/$db.db" "SELECT source, session FROM records WHERE origin = 'run'")"
done
sqlite3 "$T/runs.db" "SELECT source FROM records WHERE origin = 'run'" | has -x 'energy.json@Llama-3.1-8B-hopper-20261204T162856Z#nf4' || fail "the second energy.json is not named by its run id"
# a store written before run ids were kept whole holds their first 63 bytes: the same run again is the same rows
[ "$(sqlite3 "$T/long.db" "UPDATE records SET session = substr(session, 1, 63) WHERE origin = 'run' AND source LIKE 'energy.json.long.json#%' AND session LIKE '%first'; SELECT changes()")" = 1 ] || fail "no row to cut"
"$ECO" import --db "$T/long.db" --run "$T/ra/energy.json.long.json" | has "1 row(s), 0 new" || fail "a run stored under its cut id was stored again"
[ "$(sqlite3 "$T/long.db" "SELECT count(*) FROM records WHERE origin = 'run'")" = 2 ] || fail "rows after the re-import: $(sqlite3 "$T/long.db" "SELECT source, session FROM records")"
if "$ECO" import --db "$T/eco.db" --run "$T/cpu.json" 2>"$T/err"; then fail "a run without a meter became dataset rows"; fi
grep -q 'only runs whose meter basis is "measured"' "$T/err" || fail "no clear error for a CPU run"

# 4. Bad input: clear errors, exit 2 for usage, nothing written.
if "$ECO" measure --weights "$T/tiny" --precisions fp16,int3 --out "$T/bad.json" 2>"$T/err"; then fail "int3 accepted"; fi
grep -q "unknown precision 'int3'" "$T/err" || fail "no clear error for int3"
[ ! -e "$T/bad.json" ] || fail "bad run wrote a file"
if "$ECO" measure --weights "$T/none" --backend cpu --out "$T/bad.json" 2>"$T/err"; then fail "missing weights accepted"; fi
grep -q "$T/none" "$T/err" || fail "error does not name the missing folder"
head -c 100 "$T/tiny/model.safetensors" > "$T/trunc.safetensors"
mkdir -p "$T/trunc" && cp "$T/tiny/config.json" "$T/trunc/" && mv "$T/trunc.safetensors" "$T/trunc/model.safetensors"
if "$ECO" measure --weights "$T/trunc" --backend cpu --out "$T/bad.json" 2>"$T/err"; then fail "truncated safetensors accepted"; fi
grep -qi "model.safetensors" "$T/err" || fail "truncated-file error does not name the file"
echo "measure_cli: all checks passed"
