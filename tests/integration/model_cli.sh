#!/usr/bin/env bash
# eco model save / generate on checkpoints a user could hand it: a folder that already holds one, weights the
# engine cannot hold in fp16, option values that are not numbers. Each gets a clear error and writes nothing.
set -euo pipefail
ECO=${ECO_BIN:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { set +e; "$ECO" "$@" > "$T/out" 2> "$T/err"; rc=$?; set -e; }

# saving over a checkpoint is refused; the first one still generates as before
"$ECO" model save tiny --out "$T/ck" --seed 1 --shards 2 > /dev/null
before=$("$ECO" model generate --weights "$T/ck" --prompt-ids 5,6 --tokens 6 | grep '^tokens')
run model save tiny --out "$T/ck" --seed 99
[ $rc -eq 2 ] && grep -q "already holds a checkpoint" "$T/err" || fail "save over a checkpoint: rc $rc, $(cat "$T/err")"
after=$("$ECO" model generate --weights "$T/ck" --prompt-ids 5,6 --tokens 6 | grep '^tokens')
[ "$before" = "$after" ] || fail "the first checkpoint changed: $before / $after"
want=$("$ECO" model generate --preset tiny --seed 1 --prompt-ids 5,6 --tokens 6 | grep '^tokens')
[ "$before" = "$want" ] || fail "checkpoint vs synthetic: $before / $want"
# one .safetensors file with its config given apart
"$ECO" model save tiny --out "$T/one" --seed 1 > /dev/null
run model generate --weights "$T/one/model.safetensors" --prompt-ids 5,6 --tokens 6
[ $rc -eq 1 ] && grep -q -- "needs a model config (--config" "$T/err" || fail "bare file without config: rc $rc, $(cat "$T/err")"
single=$("$ECO" model generate --weights "$T/one/model.safetensors" --config "$T/one/config.json" --prompt-ids 5,6 --tokens 6 | grep '^tokens')
[ "$single" = "$want" ] || fail "one file + --config: $single / $want"
grep -q '"torch_dtype": "float16"' "$T/ck/config.json" || fail "config.json torch_dtype: $(grep dtype "$T/ck/config.json")"

# a norm, or an embedding row, the engine cannot hold in fp16 is an error naming the tensor (was: NaN logits)
patch() { # folder tensor index value
  python3 - "$@" <<'PY'
import json, struct, sys
d, name, idx, val = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
p = d + '/model.safetensors'; b = bytearray(open(p, 'rb').read())
n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
assert h[name]['dtype'] == 'F32'
o = 8 + n + h[name]['data_offsets'][0] + 4 * idx
b[o:o + 4] = struct.pack('<f', val); open(p, 'wb').write(b)
PY
}
for case in "model.norm.weight 2 nan not finite" "model.layers.0.input_layernorm.weight 0 1e5 outside the fp16 range" \
            "model.embed_tokens.weight 70 inf not finite"; do
  set -- $case
  rm -rf "$T/bad"; "$ECO" model save tiny --out "$T/bad" --dtype f32 > /dev/null
  patch "$T/bad" "$1" "$2" "$3"
  run model generate --weights "$T/bad" --prompt-ids 1,2 --tokens 3
  [ $rc -eq 1 ] && grep -q "$1\[$2\] = .* is ${*:4}" "$T/err" || fail "$1 = $3: rc $rc, $(cat "$T/err") $(cat "$T/out")"
done

# option values are numbers in range
for bad in "--int8-threshold abc" "--threads 1000" "--seed 1x" "--tokens 0"; do
  run model generate --preset tiny $bad
  [ $rc -eq 2 ] && grep -q "must be" "$T/err" || fail "generate $bad: rc $rc, $(cat "$T/err")"
done
run model info --config "$T"
[ $rc -ne 0 ] && grep -q "is a folder" "$T/err" || fail "info --config DIR: $(cat "$T/err")"
run model save tiny --out "$T/s2" --shards 2x
[ $rc -eq 2 ] && [ ! -e "$T/s2" ] || fail "save --shards 2x: rc $rc"
run model save tiny --out "$T/s3" --shards 30
[ $rc -eq 2 ] && grep -q "30 shards for 21 tensors" "$T/err" && [ ! -e "$T/s3/config.json" ] || fail "save --shards 30: rc $rc, $(cat "$T/err")"
echo ok
