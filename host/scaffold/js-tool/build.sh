#!/bin/sh
# Builds {{name}}.wasm, the whole plugin: the component (componentize-js, every WASI feature it
# can leave out disabled, as chatd gives a plugin no files, sockets or environment) with
# manifest.json inside (chatd plugins pack).
set -eu
cd "$(dirname "$0")"
mkdir -p build
"${COMPONENTIZE_JS:-componentize-js}" app.js --wit wit --world-name tool \
  --disable stdio random clocks http fetch-event -o build/app.wasm >/dev/null
"${CHATD:-chatd}" plugins pack build/app.wasm --manifest manifest.json --out {{name}}.wasm
