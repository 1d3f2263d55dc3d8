#!/usr/bin/env bash
# Starts `eco serve`, fetches /openapi.json and lints it with Redocly CLI under a strict ruleset.
# Ruleset: `recommended-strict` (the recommended rules with warnings promoted to errors: operationId,
# security-defined, no unused components, valid examples, ...) plus rules that encode this API's promises:
# 4xx answers are RFC 9457/7807 problem details, every operation is described and has exactly one declared
# tag, tags and the SPDX license are documented, and every 2XX response declares Cache-Control and CORS.
set -euo pipefail
: "${ECO_BIN:?}" "${ECO_SOURCE_DIR:?}"
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

"$ECO_BIN" import --db "$tmp/eco.db" "$ECO_SOURCE_DIR/data/reference" >/dev/null
"$ECO_BIN" fit --db "$tmp/eco.db" --out "$tmp/curves.json" >/dev/null
: >"$tmp/serve.log" # exists before the poll below reads it: the server opens it in the background
"$ECO_BIN" serve --curves "$tmp/curves.json" --db "$tmp/eco.db" --port 0 --threads 1 2>"$tmp/serve.log" &
pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/serve.log")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.log"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "eco serve did not start"; cat "$tmp/serve.log"; exit 1; }

curl -fsS "http://127.0.0.1:$port/openapi.json" -o "$tmp/openapi.json"
cat >"$tmp/redocly.yaml" <<'YAML'
extends:
  - recommended-strict
rules:
  operation-4xx-problem-details-rfc7807: error
  operation-description: error
  operation-singular-tag: error
  operation-tag-defined: error
  tag-description: error
  info-license-strict: error
  no-unused-components: error
  component-name-unique: error
  paths-kebab-case: error
  response-contains-header:
    severity: error
    names:
      '2XX':
        - Cache-Control
        - Access-Control-Allow-Origin
YAML
cd "$ECO_SOURCE_DIR"
out=$(NO_UPDATE_NOTIFIER=1 REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
  npx --no-install redocly lint --config "$tmp/redocly.yaml" "$tmp/openapi.json" 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -v '║\|╔\|╚' | sed '/^\s*$/d'
echo "$out" | grep -q "Your API description is valid" || { echo "redocly did not report a valid description"; exit 1; }

# Negative control: the same lint must fail on a copy with a non-problem 4xx, or this test proves nothing.
node -e '
const fs = require("fs"); const d = JSON.parse(fs.readFileSync(process.argv[1]));
d.paths["/v1/gpus"].get.responses["400"] = { description: "x", content: { "application/json": { schema: { type: "object" } } } };
fs.writeFileSync(process.argv[2], JSON.stringify(d));' "$tmp/openapi.json" "$tmp/broken.json"
if npx --no-install redocly lint --config "$tmp/redocly.yaml" "$tmp/broken.json" >/dev/null 2>&1; then
  echo "the ruleset accepted a broken document"; exit 1
fi
echo "api_openapi_lint: ok (spec valid; broken copy rejected)"
