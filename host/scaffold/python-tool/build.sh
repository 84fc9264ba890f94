#!/bin/sh
# Builds {{name}}.wasm, the whole plugin: the component (componentize-py; its WASI imports
# become stubs that trap, as chatd gives a plugin no files, sockets or environment) with
# manifest.json inside (chatd plugins pack).
set -eu
cd "$(dirname "$0")"
mkdir -p build
"${COMPONENTIZE_PY:-componentize-py}" -q -d wit -w tool componentize --stub-wasi app -o build/app.wasm
"${CHATD:-chatd}" plugins pack build/app.wasm --manifest manifest.json --out {{name}}.wasm
