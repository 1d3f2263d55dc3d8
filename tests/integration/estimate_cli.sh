#!/usr/bin/env bash
# eco import -> eco fit -> eco estimate / eco optimize on the reference data; checks JSON values and exit codes.
set -euo pipefail
: "${ECO_BIN:?}" "${ECO_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
jq_num() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=eval("d"+sys.argv[2]); print(v)' "$1" "$2"; }

"$ECO_BIN" import --db "$tmp/eco.db" --quiet "$ECO_SOURCE_DIR/data/reference" >/dev/null
"$ECO_BIN" fit --db "$tmp/eco.db" --out "$tmp/curves.json" >"$tmp/fit.txt"
grep -q "^ada .*nf4" "$tmp/fit.txt" || fail "fit table lacks ada nf4"
# deterministic: a second fit gives the same bytes
"$ECO_BIN" fit --db "$tmp/eco.db" --out "$tmp/curves2.json" --quiet
cmp -s "$tmp/curves.json" "$tmp/curves2.json" || fail "re-fit is not byte-identical"
# a proxy curve is carried over only from a stack known to be the same: curves fitted without the stack split
# record none, so T4 int8-mixed (estimated from ada with the split) is refused, with why
"$ECO_BIN" fit --db "$tmp/eco.db" --out "$tmp/nosplit.json" --no-split-backend --quiet
"$ECO_BIN" estimate --curves "$tmp/curves.json" --gpu T4 --precision int8-mixed --model-params 7 --json > "$tmp/t4.json"
[ "$(jq_num "$tmp/t4.json" '["label"]')" = estimated ] || fail "T4 int8-mixed is not estimated from its proxy"
set +e; "$ECO_BIN" estimate --curves "$tmp/nosplit.json" --gpu T4 --precision int8-mixed --model-params 7 2> "$tmp/ns.err"; rc=$?; set -e
[ $rc -ne 0 ] && grep -q "fitted without the software-stack split" "$tmp/ns.err" || fail "no-split proxy: rc $rc, $(cat "$tmp/ns.err")"
# a valid request the data cannot serve exits 3 (no turing fp8 rows), a wrong one 2
set +e
"$ECO_BIN" fit --db "$tmp/eco.db" --out "$tmp/none.json" --arch turing --precision fp8 --quiet 2>/dev/null; [ $? -eq 3 ] || fail "fit with no matching group should exit 3"
"$ECO_BIN" fit --db "$tmp/eco.db" --out "$tmp/none.json" --arch vulcan --quiet 2>/dev/null; [ $? -eq 2 ] || fail "fit with an unknown arch should exit 2"
set -e

# measured anchor: RTX 4090 7B NF4 (July container session) = -28.46%
"$ECO_BIN" estimate --curves "$tmp/curves.json" --model-params 7e9 --gpu "RTX 4090" --precision nf4 --json >"$tmp/e1.json"
[ "$(jq_num "$tmp/e1.json" '["label"]')" = measured ] || fail "7B ada nf4 should be measured"
python3 - "$tmp/e1.json" <<'PY' || fail "7B ada nf4 values"
import json, sys
d = json.load(open(sys.argv[1]))
assert abs(d["delta_pct"] - (-28.46)) < 0.05, d["delta_pct"]
lo, hi = d["range95"]
assert lo < d["delta_pct"] < hi < 0, d["range95"]
assert d["recommendation"] == "quantize"
assert d["energy"]["fp16_mj_per_token"]["value"] > 0
PY

# preset model on a proxy arch
"$ECO_BIN" estimate --curves "$tmp/curves.json" --model Qwen2.5-7B --gpu H200 --precision int8-mixed --json >"$tmp/e2.json"
python3 - "$tmp/e2.json" <<'PY' || fail "H200 int8-mixed values"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["label"] == "estimated" and d["arch_used"] == "ampere" and d["proxy"]["arch"] == "ampere"
assert abs(d["input"]["params_b"] - 7.6156) < 0.01, d["input"]["params_b"]
assert d["delta_pct"] > 50 and d["recommendation"] == "do_not_quantize"
assert d["energy"] is None
PY

# a context the model does not take is a usage error naming ctx
set +e
"$ECO_BIN" estimate --curves "$tmp/curves.json" --model Qwen2.5-7B --gpu A100 --ctx 40000 > /dev/null 2> "$tmp/ctx.err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q 'ctx: Qwen2.5-7B takes at most 32768 positions' "$tmp/ctx.err" || fail "ctx past max_pos: rc $rc, $(cat "$tmp/ctx.err")"

# plain output has the label, n and range
"$ECO_BIN" estimate --curves "$tmp/curves.json" --model-params 13 --gpu T4 >"$tmp/plain.txt"
grep -q "extrapolated" "$tmp/plain.txt" || fail "plain output lacks the label"
grep -q "range95" "$tmp/plain.txt" || fail "plain output lacks the range"

# bad input: exit 2 and a message naming the field
set +e
"$ECO_BIN" estimate --curves "$tmp/curves.json" --model-params 7 --gpu "Voodoo 5" 2>"$tmp/err.txt"; rc=$?
set -e
[ $rc -eq 2 ] || fail "unknown GPU exit $rc"
grep -q "gpu: unknown GPU 'Voodoo 5'" "$tmp/err.txt" || fail "unknown GPU message: $(cat "$tmp/err.txt")"
set +e
"$ECO_BIN" estimate --curves "$tmp/curves.json" --model-params -7 --gpu T4 2>/dev/null; rc1=$?
"$ECO_BIN" estimate --curves "$tmp/curves.json" --model-params 7 --gpu T4 --bogus 1 2>/dev/null; rc2=$?
"$ECO_BIN" optimize --curves "$tmp/curves.json" --model Qwen2.5-7B --gpu T4 --objective cheapest 2>/dev/null; rc3=$?
set -e
[ $rc1 -eq 2 ] && [ $rc2 -eq 2 ] && [ $rc3 -eq 2 ] || fail "bad input exits: $rc1 $rc2 $rc3"
# an option given twice, or a parameter under both its spellings: which was meant is not guessed
set +e
"$ECO_BIN" estimate --curves "$tmp/curves.json" --gpu T4 --model-params 7 --model-params 8 2>"$tmp/twice.err"; rc1=$?
"$ECO_BIN" optimize --curves "$tmp/curves.json" --gpu T4 --model-params 7 --params-b 8 2>"$tmp/alias.err"; rc2=$?
"$ECO_BIN" measure --model Qwen2.5-0.5B --tokens 8 --tokens 16 2>"$tmp/measure.err"; rc3=$?
set -e
[ $rc1 -eq 2 ] && grep -q -- "--model-params is given twice" "$tmp/twice.err" || fail "repeated option: rc $rc1, $(cat "$tmp/twice.err")"
[ $rc2 -eq 2 ] && grep -q -- "--params-b gives params_b again" "$tmp/alias.err" || fail "two spellings: rc $rc2, $(cat "$tmp/alias.err")"
[ $rc3 -eq 2 ] && grep -q -- "eco measure: --tokens is given twice" "$tmp/measure.err" || fail "measure: rc $rc3, $(cat "$tmp/measure.err")"

# a valid request the data cannot answer: exit 3 (not the usage code), naming what has data
set +e
"$ECO_BIN" estimate --curves "$tmp/curves.json" --model-params 7 --gpu T4 --precision fp8 2>"$tmp/nodata.err"; rc=$?
set -e
[ $rc -eq 3 ] && grep -q "precision: no data for fp8 on turing" "$tmp/nodata.err" || fail "no-data exit $rc: $(cat "$tmp/nodata.err")"

# optimizer respects budgets
"$ECO_BIN" optimize --curves "$tmp/curves.json" --model Qwen2.5-7B --gpu "RTX 4090" --max-vram-gb 16 --max-latency-ms 50 --objective energy --json >"$tmp/o1.json"
python3 - "$tmp/o1.json" <<'PY' || fail "optimize values"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["recommended"]
assert r is not None and r["vram_gb"] <= 16 and r["latency_ms"] <= 50, r
assert r["precision"] != "fp16" or r["batch"] <= 2
assert len(d["alternatives"]) <= 3
for a in d["alternatives"]:
    assert a["feasible"] and a["vram_gb"] <= 16 and a["latency_ms"] <= 50
assert r["basis"]["latency"] == "modelled" and r["basis"]["vram"] == "modelled"
assert d["feasible_count"] >= 1 and d["candidates_count"] >= d["feasible_count"]
PY
# a recommendation whose ΔE range includes 0 says so (T4 Qwen2.5-3B nf4: -1.4% at short context, range -3.3 to +0.6;
# at batch 64 and ctx 2048 the KV caches shrink it to about -0.9%, the note quoting the candidate's own ΔE)
"$ECO_BIN" optimize --curves "$tmp/curves.json" --model Qwen2.5-3B --gpu T4 --json >"$tmp/o3.json"
python3 - "$tmp/o3.json" <<'PY' || fail "optimize: undecided ΔE note"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["recommended"]
assert r["precision"] == "nf4" and r["delta_range95"][0] < 0 < r["delta_range95"][1], r
want = "nf4's ΔE (%+.1f%%" % r["delta_pct"]
assert any(n.startswith(want) and "does not tell it from fp16" in n for n in d["notes"]), (want, d["notes"])
PY
"$ECO_BIN" optimize --curves "$tmp/curves.json" --model-params 70 --gpu T4 --max-vram-gb 8 --json >"$tmp/o2.json"
python3 - "$tmp/o2.json" <<'PY' || fail "infeasible optimize"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["recommended"] is None and d["closest_infeasible"]["reason"]
PY
echo "ok"
