#!/usr/bin/env bash
# eco import / eco export end to end: reference folder, idempotent re-import, a corrupted copy (rejected rows
# reported as file:line, the rest kept), replications (valid, invalid, not JSON), export filters and formats.
set -euo pipefail
: "${ECO_BIN:?}" "${ECO_SOURCE_DIR:?}"
REF="$ECO_SOURCE_DIR/data/reference"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Reads all of its input before matching: `cmd | grep -q` can exit on the first match while cmd still writes,
# and the SIGPIPE that kills cmd fails the whole pipeline under pipefail (a flaky test).
has() { local text; text=$(cat); grep -q "$@" <<< "$text"; }

# 1. first import
"$ECO_BIN" import --db "$T/eco.db" --quiet "$REF" > "$T/out1" || fail "first import exited $?"
grep -qx 'files: 12 read, 0 failed' "$T/out1" || fail "files line: $(cat "$T/out1")"
grep -qx 'rows: 205 read, 164 inserted, 0 updated, 0 unchanged, 19 linked, 12 fp16 baselines, 0 rejected' "$T/out1" \
  || fail "rows line: $(cat "$T/out1")"

# 2. re-import inserts nothing
"$ECO_BIN" import --db "$T/eco.db" "$REF" > "$T/out2" || fail "second import exited $?"
grep -q '^rows: 205 read, 0 inserted, 0 updated, 164 unchanged' "$T/out2" || fail "re-import: $(head -3 "$T/out2")"
grep -q '^linked: ecocompute-ai_a800_summary.csv:3 -> measured.csv:28: ' "$T/out2" || fail "A800 duplicate not linked"

# 2b. an updated file (a row inserted at the top shifts every line): the store mirrors it, nothing counted twice or
# overwritten by a neighbour; reading the original again restores the same records and the same curves
cp -r "$REF" "$T/upd"
sed -i '1a RTX 4090D,ada,24,Qwen2-72B-new,72,NF4,9000,8000,2,2,10.0,x' "$T/upd/measured.csv"
# ... with the A800 config table (whose rows link to measured.csv's) listed first: links survive the shift
{ head -1 "$REF/manifest.csv"; grep '^ecocompute-ai_a800_summary.csv,' "$REF/manifest.csv"; tail -n +2 "$REF/manifest.csv" | grep -v '^ecocompute-ai_a800_summary.csv,'; } > "$T/upd/manifest.csv"
"$ECO_BIN" export --db "$T/eco.db" --format csv | LC_ALL=C sort > "$T/before.csv"
"$ECO_BIN" fit --db "$T/eco.db" --out "$T/before.json" --quiet
"$ECO_BIN" import --db "$T/eco.db" --quiet "$T/upd" > "$T/upd.out" || fail "updated folder exited $?"
[ "$("$ECO_BIN" export --db "$T/eco.db" --format csv | wc -l)" -eq $(( $(wc -l < "$T/before.csv") + 1 )) ] || fail "an inserted row changed the record count by more than one"
[ "$("$ECO_BIN" export --db "$T/eco.db" --format csv | grep -c 'Qwen2-72B-new')" -eq 1 ] || fail "the new row is not stored once"
grep -q ', 19 linked,' "$T/upd.out" || fail "links after the shift: $(cat "$T/upd.out")"
"$ECO_BIN" import --db "$T/fresh_upd.db" --quiet "$T/upd" | has '^rows: 206 read, 165 inserted, 0 updated, 0 unchanged, 19 linked' \
  || fail "a first import with the config table listed first counts rows twice"
"$ECO_BIN" import --db "$T/eco.db" --quiet "$REF" > /dev/null || fail "re-import of the original exited $?"
"$ECO_BIN" export --db "$T/eco.db" --format csv | LC_ALL=C sort | cut -d, -f2- > "$T/after.csv"
cut -d, -f2- "$T/before.csv" | cmp -s - "$T/after.csv" || fail "records differ after the round trip: $(diff <(cut -d, -f2- "$T/before.csv") "$T/after.csv" | head -5)"
"$ECO_BIN" fit --db "$T/eco.db" --out "$T/after.json" --quiet
cmp -s "$T/before.json" "$T/after.json" || fail "curves differ after the round trip"

# 2c. quality, batch and phase rows mirror their files too: a last line dropped from each is gone from the store,
# and reading the originals again restores the same rows (ids aside)
side_rows() { for t in quality batch_rows phase_rows; do sqlite3 "$T/eco.db" "SELECT source, gpu, model, precision FROM $t"; done | LC_ALL=C sort; }
side_rows > "$T/side_before.txt"
cp -r "$REF" "$T/cut"
for f in ecocompute-ai_ppl_yi1.5_6b_wikitext2_20260224.csv rtxpro6000_fp16_e2e_runs_20260608.csv rtxpro6000_phase_summary_20260603.csv; do
  sed -i '$d' "$T/cut/$f"
done
"$ECO_BIN" import --db "$T/eco.db" "$T/cut" > "$T/cut.out" || fail "the cut folder exited $?"
grep -qx 'removed: 3 stored row(s) the re-read files no longer hold' "$T/cut.out" || fail "cut: $(cat "$T/cut.out")"
side_rows | diff "$T/side_before.txt" - | grep '^[<>]' > "$T/side_diff.txt" || true
[ "$(grep -c '^<' "$T/side_diff.txt")" -eq 3 ] && ! grep -q '^>' "$T/side_diff.txt" || fail "after the cut: $(cat "$T/side_diff.txt")"
"$ECO_BIN" import --db "$T/eco.db" --quiet "$REF" > /dev/null || fail "re-import of the original exited $?"
side_rows | cmp -s "$T/side_before.txt" - || fail "quality/batch/phase rows differ after the round trip"

# 2d. eco serve refuses a damaged store at start (not on the first request that reads the damaged page), an empty
# file, and a missing one, each with what to do
"$ECO_BIN" fit --db "$T/eco.db" --out "$T/serve_curves.json" --quiet
cp "$T/eco.db" "$T/damaged.db" && sqlite3 "$T/damaged.db" "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(4096 * 2 + 8); f.write(b"\x00\x05" * 50)' "$T/damaged.db"
: > "$T/empty.db"
for db in damaged empty missing; do
  set +e; timeout 10 "$ECO_BIN" serve --db "$T/$db.db" --curves "$T/serve_curves.json" --port 0 2> "$T/serve_$db.err"; rc=$?; set -e
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "serve on the $db store: rc $rc, $(cat "$T/serve_$db.err")"
done
grep -q 'the file is damaged (.*): restore it from a copy' "$T/serve_damaged.err" || fail "damaged: $(cat "$T/serve_damaged.err")"
grep -q 'an empty file, not a store' "$T/serve_empty.err" || fail "empty: $(cat "$T/serve_empty.err")"
grep -q 'no such file (make the store with' "$T/serve_missing.err" || fail "missing: $(cat "$T/serve_missing.err")"

# 3. export: CSV filtered, JSON
"$ECO_BIN" export --db "$T/eco.db" --format csv --arch ada --precision nf4 > "$T/ada_nf4.csv"
[ "$(wc -l < "$T/ada_nf4.csv")" -eq 15 ] || fail "ada nf4 export has $(wc -l < "$T/ada_nf4.csv") lines, want 15"
head -1 "$T/ada_nf4.csv" | has '^source,origin,session,gpu,arch,' || fail "CSV header"
grep -q '^measured.csv:10,reference,rtx4090-2026-07-container,RTX 4090,ada,24,Qwen2-7B,7,nf4,1,5467.88,3911.75,-28.4' \
  "$T/ada_nf4.csv" || fail "RTX 4090 Qwen2-7B NF4 row"
"$ECO_BIN" export --db "$T/eco.db" --format csv --source-file measured.csv --precision llm.int8 > "$T/int8.csv"
[ "$(wc -l < "$T/int8.csv")" -eq 10 ] || fail "measured.csv int8-mixed export: $(wc -l < "$T/int8.csv") lines, want 10"
"$ECO_BIN" export --db "$T/eco.db" --format json --source-file measured.csv > "$T/all.json"
grep -q '"count": 29' "$T/all.json" || fail "JSON count"
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["records"])==29' "$T/all.json" || fail "JSON parse"
fi
# every reference row carries its licence; gpu and model match in any case, a card also by its NVML name
! tail -n +2 "$T/ada_nf4.csv" | grep -v 'CC BY 4.0, Hongping Zhang' | has . || fail "a reference row without its licence"
# ... its own file's: the A800 summary's rows are MIT (data/reference/ATTRIBUTION.md)
"$ECO_BIN" export --db "$T/eco.db" --source-file ecocompute-ai_a800_summary.csv > "$T/a800.csv"
[ "$(tail -n +2 "$T/a800.csv" | grep -c '"MIT, Hongping Zhang')" -eq "$(( $(wc -l < "$T/a800.csv") - 1 ))" ] || fail "A800 summary rows: $(tail -n +2 "$T/a800.csv" | head -2)"
[ "$("$ECO_BIN" export --db "$T/eco.db" --gpu 'rtx 4090' | wc -l)" -eq "$("$ECO_BIN" export --db "$T/eco.db" --gpu 'RTX 4090' | wc -l)" ] || fail "--gpu is case-sensitive"
[ "$("$ECO_BIN" export --db "$T/eco.db" --gpu 'rtx 4090' | wc -l)" -gt 1 ] || fail "--gpu 'rtx 4090' found nothing"
[ "$("$ECO_BIN" export --db "$T/eco.db" --model qwen2-7b | wc -l)" -gt 1 ] || fail "--model is case-sensitive"
# a model by any spelling of its preset, as /v1/measurements and the estimator take it
stored=$("$ECO_BIN" export --db "$T/eco.db" --model TinyLlama-1.1B-Chat-v1.0 | wc -l)
[ "$stored" -gt 1 ] && [ "$("$ECO_BIN" export --db "$T/eco.db" --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 | wc -l)" -eq "$stored" ] \
  && [ "$("$ECO_BIN" export --db "$T/eco.db" --model tinyllama-1.1b | wc -l)" -eq "$stored" ] || fail "--model by the preset's other names"
set +e
"$ECO_BIN" export --db "$T/eco.db" --origin replication > /dev/null 2> "$T/orig.err"; [ $? -eq 2 ] || fail "--origin replication should exit 2"
grep -q "GET /v1/replications" "$T/orig.err" || fail "--origin replication: $(cat "$T/orig.err")"
"$ECO_BIN" export --db "$T/eco.db" --format xml > /dev/null 2>&1; [ $? -eq 2 ] || fail "bad format should exit 2"
"$ECO_BIN" export --db "$T/none.db" > /dev/null 2>&1; [ $? -eq 1 ] || fail "missing db should exit 1"
[ ! -e "$T/none.db" ] || fail "export created a database"
set -e

# 4. corrupted copy: rejected rows are reported with file:line, the others imported, exit 0
mkdir "$T/bad"
cp "$REF"/* "$T/bad/"
chmod u+w "$T/bad"/*
sed -i '5s/,3.0,NF4,/,three,NF4,/; 14s/,INT8,/,INT4,/' "$T/bad/measured.csv"
printf 'RTX 4090,ada,24,broken\n' >> "$T/bad/measured.csv"
"$ECO_BIN" import --db "$T/bad.db" --quiet "$T/bad" > "$T/out3" || fail "import with bad rows should exit 0"
grep -qx "rejected: measured.csv:5: params_b 'three' is not a number" "$T/out3" || fail "line 5 not reported: $(cat "$T/out3")"
grep -qx "rejected: measured.csv:14: unknown precision 'INT4' (this file maps NF4=nf4;INT8=int8-mixed)" "$T/out3" \
  || fail "line 14 not reported"
grep -qx 'rejected: measured.csv:31: expected 12 fields, got 4' "$T/out3" || fail "line 31 not reported"
grep -q ', 3 rejected$' "$T/out3" || fail "rejected count"
n=$("$ECO_BIN" export --db "$T/bad.db" --source-file measured.csv | wc -l)
[ "$n" -eq 28 ] || fail "bad copy kept $((n - 1)) measured.csv records, want 27"

# 5. nothing importable, or a folder without a manifest: non-zero
mkdir "$T/empty"
set +e
"$ECO_BIN" import --db "$T/e.db" "$T/empty" > /dev/null 2>&1; [ $? -eq 1 ] || fail "empty folder should exit 1"
"$ECO_BIN" import --db "$T/e.db" > /dev/null 2>&1; [ $? -eq 2 ] || fail "missing path should exit 2"

# 5b. a manifest kind with a typo fails the import before anything is stored (it had dropped the file, exit 0)
cp -r "$REF" "$T/typo" && sed -i 's/,paired-rows,/,paired-row,/' "$T/typo/manifest.csv"
"$ECO_BIN" import --db "$T/typo.db" "$T/typo" > /dev/null 2> "$T/typo.err"; [ $? -eq 1 ] || fail "an unknown manifest kind should exit 1"
grep -q "unknown kind 'paired-row'" "$T/typo.err" || fail "unknown kind: $(cat "$T/typo.err")"
set -e
[ "$("$ECO_BIN" export --db "$T/typo.db" --format csv 2>/dev/null | wc -l)" -le 1 ] || fail "rows stored from a manifest with an unknown kind"
# 5c. a file's manifest entries need not be adjacent: the same rows as the first import
cp -r "$REF" "$T/order" && { grep -v '^measured.csv,measured,gpu=T4,' "$REF/manifest.csv"; grep '^measured.csv,measured,gpu=T4,' "$REF/manifest.csv"; } > "$T/order/manifest.csv"
"$ECO_BIN" import --db "$T/order.db" --quiet "$T/order" > "$T/order.out" || fail "reordered manifest exited $?"
grep -qx 'rows: 205 read, 164 inserted, 0 updated, 0 unchanged, 19 linked, 12 fp16 baselines, 0 rejected' "$T/order.out" \
  || fail "reordered manifest: $(cat "$T/order.out")"
# an import lists the links it made, not every link in the store
"$ECO_BIN" import --db "$T/order.db" "$T/empty" > "$T/empty.out" 2>/dev/null || true
! grep -q '^linked:' "$T/empty.out" || fail "an import that linked nothing listed links: $(grep -c '^linked:' "$T/empty.out")"

# 6. replications: a valid energy.json, the same again, an invalid one, not JSON
EX="$ECO_SOURCE_DIR/data/schema/examples"
# the example itself is not a measurement: refused as a replication and as a run, nothing stored
set +e
"$ECO_BIN" import --db "$T/eco.db" "$EX/energy.example.valid.json" > /dev/null 2> "$T/ex.err"; [ $? -eq 1 ] || fail "example replication should exit 1"
grep -q 'example document' "$T/ex.err" || fail "example refusal: $(cat "$T/ex.err")"
"$ECO_BIN" import --db "$T/eco.db" --run "$EX/energy.example.valid.json" > /dev/null 2>&1; [ $? -eq 1 ] || fail "example run should exit 1"
# its flag dropped, the example is still the example (its GPU UUID and host): refused both ways
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("example"); json.dump(d, open(sys.argv[2], "w"))' \
  "$EX/energy.example.valid.json" "$T/unflagged.energy.json"
"$ECO_BIN" import --db "$T/eco.db" "$T/unflagged.energy.json" > /dev/null 2> "$T/ex.err"; [ $? -eq 1 ] || fail "unflagged example replication should exit 1"
grep -q "the examples' GPU or host" "$T/ex.err" || fail "unflagged example refusal: $(cat "$T/ex.err")"
"$ECO_BIN" import --db "$T/eco.db" --run "$T/unflagged.energy.json" > /dev/null 2>&1; [ $? -eq 1 ] || fail "unflagged example run should exit 1"
set -e
# a document of the example's figures from another host and card stands for a replication in what follows
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("example"); d["environment"]["gpu"]["uuid"]="GPU-5a1e0000-0000-4000-8000-000000000001"; d["environment"]["host"]["hostname"]="lab-node-07"; json.dump(d, open(sys.argv[2], "w"))' \
  "$EX/energy.example.valid.json" "$T/rep.energy.json"
"$ECO_BIN" import --db "$T/eco.db" "$T/rep.energy.json" > "$T/rep1" || fail "valid replication exited $?"
grep -q '^replication #1 stored: valid' "$T/rep1" || fail "valid replication: $(cat "$T/rep1")"
"$ECO_BIN" import --db "$T/eco.db" "$T/rep.energy.json" | has '^replication #1 already stored' \
  || fail "same document twice"
set +e
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("example"); json.dump(d, open(sys.argv[2], "w"))' \
  "$EX/energy.invalid.zero-energy.json" "$T/zero.energy.json"
"$ECO_BIN" import --db "$T/eco.db" "$T/zero.energy.json" > "$T/rep2" 2> "$T/rep2.err"
[ $? -eq 1 ] || fail "invalid replication should exit 1"
grep -q 'mj_per_token_gross' "$T/rep2.err" || fail "invalid replication error not shown"
printf 'not json' > "$T/x.json"
"$ECO_BIN" import --db "$T/eco.db" "$T/x.json" > /dev/null 2>&1; [ $? -eq 1 ] || fail "not-JSON should exit 1"
printf '[1,2]' > "$T/arr.json"
"$ECO_BIN" import --db "$T/eco.db" "$T/arr.json" > "$T/arr.out" 2>&1; [ $? -eq 1 ] || fail "array should exit 1"
grep -q 'must be a JSON object' "$T/arr.out" || fail "array should be refused"
set -e
if command -v sqlite3 >/dev/null; then
  [ "$(sqlite3 "$T/eco.db" 'select count(*) from replications')" = 1 ] || fail "only the valid replication is stored"
  [ "$(sqlite3 "$T/eco.db" "select validation from replications where id = 1")" = valid ] || fail "status"
  [ "$(sqlite3 "$T/eco.db" 'pragma journal_mode')" = wal ] || fail "WAL"
fi

# 7. runs: a copy under another name is the same run (no second set of rows); an edited copy under the same run_id
# is refused and the stored run kept; figures that contradict each other are refused; --run takes a file
H="$ECO_SOURCE_DIR/data/h200/h200_qwen2.5-0.5b.energy.json"
"$ECO_BIN" import --db "$T/r.db" --run "$H" | has '4 row(s), 4 new' || fail "first run import"
cp "$H" "$T/copy.energy.json"
"$ECO_BIN" import --db "$T/r.db" --run "$T/copy.energy.json" | has 'already stored: 4 row(s), 0 new' || fail "a copy added rows"
rows() { "$ECO_BIN" export --db "$T/r.db" --format json --origin run | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["count"], sorted({r["source"].split("#")[0] for r in d["records"]}))'; }
[ "$(rows)" = "4 ['h200_qwen2.5-0.5b.energy.json']" ] || fail "rows after the copy: $(rows)"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["results"][1]["mj_per_token_gross"] *= 0.5; json.dump(d, open(sys.argv[2], "w"))' "$H" "$T/edited.json"
set +e
"$ECO_BIN" import --db "$T/r.db" --run "$T/edited.json" > /dev/null 2> "$T/ed.err"; [ $? -eq 1 ] || fail "an edited run should be refused"
set -e
grep -q 'does not follow from the results' "$T/ed.err" || fail "edited run: $(cat "$T/ed.err")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["hardware_note"] = 1; d.pop("hardware_note"); d["notes"] = d.get("notes", []) + ["re-exported"]; json.dump(d, open(sys.argv[2], "w"))' "$H" "$T/renoted.json"
set +e
"$ECO_BIN" import --db "$T/r.db" --run "$T/renoted.json" > /dev/null 2> "$T/rn.err"; [ $? -eq 1 ] || fail "another document under a stored run_id should be refused"
grep -q 'already stored from another document' "$T/rn.err" || fail "run_id clash: $(cat "$T/rn.err")"
"$ECO_BIN" import --db "$T/r.db" --run "$T" > /dev/null 2>&1; [ $? -eq 2 ] || fail "--run with a folder should be a usage error"
set -e
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["run_id"] += "-again"; json.dump(d, open(sys.argv[2], "w"))' "$H" "$T/again.json"
set +e
"$ECO_BIN" import --db "$T/r.db" --run "$T/again.json" > /dev/null 2> "$T/ag.err"; [ $? -eq 1 ] || fail "the same measurement under a new run_id should be refused"
set -e
grep -q 'would count twice' "$T/ag.err" || fail "same measurement: $(cat "$T/ag.err")"
# ... and with its card renamed (another hopper card, the same energies to the last bit): a copy, not a measurement
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["run_id"] += "-h100"; d["environment"]["gpu"]["name"] = "NVIDIA H100 80GB HBM3"; json.dump(d, open(sys.argv[2], "w"))' "$H" "$T/renamed.json"
set +e
"$ECO_BIN" import --db "$T/r.db" --run "$T/renamed.json" > /dev/null 2> "$T/rc.err"; [ $? -eq 1 ] || fail "the same measurement on a renamed card should be refused"
set -e
grep -q 'would count twice' "$T/rc.err" && grep -q 'on NVIDIA H200' "$T/rc.err" || fail "renamed card: $(cat "$T/rc.err")"
[ "$(rows)" = "4 ['h200_qwen2.5-0.5b.energy.json']" ] || fail "rows after the refusals: $(rows)"
if command -v sqlite3 >/dev/null; then
  [ "$(sqlite3 "$T/r.db" 'select count(*) from runs')" = 1 ] || fail "a refused run's document was kept"
fi
echo "store_import: ok"
