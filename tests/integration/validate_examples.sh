#!/usr/bin/env bash
# `eco validate` against the energy.json examples: valid ones exit 0, each invalid one exits 1 and reports
# exactly the JSON Pointers its sidecar (.expect) lists; usage, I/O and malformed JSON exit 2.
set -euo pipefail
: "${ECO_BIN:?}" "${ECO_SOURCE_DIR:?}"
ex="$ECO_SOURCE_DIR/data/schema/examples"
schema="$ECO_SOURCE_DIR/data/schema/energy.schema.json"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_rc() { # expected-rc out-file command...
  local want=$1 out=$2; shift 2
  local rc=0
  "$@" >"$out" 2>"$out.err" || rc=$?
  [ "$rc" -eq "$want" ] || { cat "$out" "$out.err" >&2; fail "$* exited $rc, expected $want"; }
}

# Valid examples, schema found three ways: --schema, ECO_SCHEMA, and relative to the executable / ECO_SOURCE_DIR.
expect_rc 0 "$tmp/out" "$ECO_BIN" validate --schema "$schema" "$ex/energy.example.valid.json" "$ex/energy.example.cpu-no-meter.json"
grep -qx "$ex/energy.example.valid.json: valid" "$tmp/out" || fail "no 'valid' line: $(cat "$tmp/out")"
grep -qx "$ex/energy.example.cpu-no-meter.json: valid" "$tmp/out" || fail "no 'valid' line for cpu example"
ECO_SCHEMA="$schema" expect_rc 0 "$tmp/out" "$ECO_BIN" validate "$ex/energy.example.valid.json"
expect_rc 0 "$tmp/out" env -u ECO_SCHEMA "$ECO_BIN" validate "$ex/energy.example.valid.json"
expect_rc 0 "$tmp/out" "$ECO_BIN" validate --quiet "$ex/energy.example.valid.json"
[ ! -s "$tmp/out" ] || fail "--quiet printed for a valid file"
expect_rc 0 "$tmp/out" "$ECO_BIN" validate --schema "$schema" - <"$ex/energy.example.valid.json"
grep -qx -- "-: valid" "$tmp/out" || fail "stdin not validated"

# Invalid examples: exit 1, and the reported pointers are exactly those of the sidecar.
n=0
for doc in "$ex"/energy.invalid.*.json; do
  side="${doc%.json}.expect"
  [ -f "$side" ] || fail "no sidecar for $doc"
  expect_rc 1 "$tmp/out" "$ECO_BIN" validate --schema "$schema" "$doc"
  grep -v '^#' "$side" | sed '/^$/d; s/ [^ ]*$//' | sort >"$tmp/want"
  sed "s|^$doc: ||; s|: .*||" "$tmp/out" | sort >"$tmp/got"
  diff -u "$tmp/want" "$tmp/got" >&2 || fail "$doc: reported pointers differ from $side"
  n=$((n + 1))
done
[ "$n" -ge 10 ] || fail "only $n invalid examples"

# A mix of valid and invalid files: 1, both reported.
expect_rc 1 "$tmp/out" "$ECO_BIN" validate --schema "$schema" "$ex/energy.example.valid.json" "$ex/energy.invalid.zero-energy.json"
grep -q ": valid$" "$tmp/out" || fail "valid file not reported in a mixed run"
grep -q "energy.invalid.zero-energy.json: /results/1/mj_per_token_gross: must be > 0, got 0" "$tmp/out" || fail "message: $(cat "$tmp/out")"

# --json: machine-readable verdicts with pointer and keyword.
expect_rc 1 "$tmp/out" "$ECO_BIN" validate --json --schema "$schema" "$ex/energy.invalid.two-errors.json"
grep -q '"instance_path": "/protocol"' "$tmp/out" || fail "--json lacks instance_path: $(cat "$tmp/out")"
grep -q '"keyword": "required"' "$tmp/out" || fail "--json lacks keyword"
grep -q '"valid": false' "$tmp/out" || fail "--json lacks verdict"

# Malformed JSON: exit 2 with line and column.
printf '{\n  "schema_version": "2.0.0",\n  "results": [1, 2,]\n}\n' >"$tmp/bad.json"
expect_rc 2 "$tmp/out" "$ECO_BIN" validate --schema "$schema" "$tmp/bad.json"
grep -q "bad.json:3:[0-9]*: malformed JSON" "$tmp/out.err" || fail "no line/column: $(cat "$tmp/out.err")"
# --json gives it the documented shape: errors[] (one, keyword malformed-json) and errors_dropped
expect_rc 2 "$tmp/out" "$ECO_BIN" validate --json --schema "$schema" "$tmp/bad.json" "$ex/energy.example.valid.json"
node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); if(!(r.length===2 && r[0].valid===false && r[0].errors.length===1 && r[0].errors[0].keyword==="malformed-json" && r[0].errors_dropped===0 && r[1].valid===true)) process.exit(1)' "$tmp/out" || fail "--json malformed entry: $(cat "$tmp/out")"
# Duplicate keys are refused as malformed.
printf '{"schema_version": "2.0.0", "schema_version": "2.0.0"}' >"$tmp/dup.json"
expect_rc 2 "$tmp/out" "$ECO_BIN" validate --schema "$schema" "$tmp/dup.json"
grep -q "duplicate" "$tmp/out.err" || fail "duplicate key not named"
# Missing file, usage errors, unreadable schema.
expect_rc 2 "$tmp/out" "$ECO_BIN" validate --schema "$schema" "$tmp/nope.json"
grep -q "nope.json: cannot open" "$tmp/out.err" || fail "missing file message: $(cat "$tmp/out.err")"
expect_rc 2 "$tmp/out" "$ECO_BIN" validate
expect_rc 2 "$tmp/out" "$ECO_BIN" validate --bogus "$ex/energy.example.valid.json"
expect_rc 2 "$tmp/out" "$ECO_BIN" validate --schema "$tmp/nope.schema.json" "$ex/energy.example.valid.json"
expect_rc 2 "$tmp/out" env ECO_SCHEMA="$tmp/nope.schema.json" "$ECO_BIN" validate "$ex/energy.example.valid.json"
# A schema using an unsupported keyword is refused, not half-applied.
echo '{"unevaluatedProperties": false}' >"$tmp/unsup.schema.json"
expect_rc 2 "$tmp/out" "$ECO_BIN" validate --schema "$tmp/unsup.schema.json" "$ex/energy.example.valid.json"
grep -q "not supported" "$tmp/out.err" || fail "unsupported keyword not reported: $(cat "$tmp/out.err")"
expect_rc 0 "$tmp/out" "$ECO_BIN" validate --help
grep -q "usage: eco validate" "$tmp/out" || fail "no usage text"
# eco report: a document's strings cannot make Markdown (a heading, a table cell, HTML); no comparisons is said
node -e 'const fs=require("fs"); const d=JSON.parse(fs.readFileSync(process.argv[1],"utf8")); d.weights.model="evil|model\n# H"; d.notes.push("x\n## Injected <script>y</script>"); fs.writeFileSync(process.argv[2], JSON.stringify(d)); d.comparisons=[]; fs.writeFileSync(process.argv[3], JSON.stringify(d))' \
  "$ECO_SOURCE_DIR/data/h200/h200_qwen2.5-0.5b.energy.json" "$tmp/evil.json" "$tmp/nocomp.json"
expect_rc 0 "$tmp/evil.md" "$ECO_BIN" report "$tmp/evil.json"
[ "$(grep -c '^#' "$tmp/evil.md")" -eq "$(grep -c '^#' <("$ECO_BIN" report "$ECO_SOURCE_DIR/data/h200/h200_qwen2.5-0.5b.energy.json"))" ] || fail "a document's string made a heading: $(grep '^#' "$tmp/evil.md")"
grep -q '^# Energy per generated token: evil\\|model \\# H on ' "$tmp/evil.md" || fail "title: $(head -1 "$tmp/evil.md")"
! grep -qE '(^|[^\\])<script>' "$tmp/evil.md" || fail "HTML passed into the report"
# ... nor can an invalid one's keys and values, which reach the banner and the flags cell
node -e 'const fs=require("fs"); const d=JSON.parse(fs.readFileSync(process.argv[1],"utf8")); d["x\n## key"]=1; d.software.version="<img src=x onerror=alert(1)>"; d.results[0].flags=["a|b|c"]; fs.writeFileSync(process.argv[2], JSON.stringify(d))' \
  "$ECO_SOURCE_DIR/data/h200/h200_qwen2.5-0.5b.energy.json" "$tmp/bad_keys.json"
expect_rc 1 "$tmp/bad_keys.md" "$ECO_BIN" report "$tmp/bad_keys.json"
! grep -q '^## key' "$tmp/bad_keys.md" || fail "a key made a heading in the banner"
! grep -qE '(^|[^\\])<img' "$tmp/bad_keys.md" || fail "a tag passed into the report"
grep -q 'a\\|b\\|c' "$tmp/bad_keys.md" || fail "a flag's | split the table: $(grep 'a.b.c' "$tmp/bad_keys.md")"
expect_rc 0 "$tmp/nocomp.md" "$ECO_BIN" report "$tmp/nocomp.json"
grep -q '^- No comparisons' "$tmp/nocomp.md" || fail "an empty headline"
echo "validate_examples: $n invalid examples and the valid ones behave as expected"
