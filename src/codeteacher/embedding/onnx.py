"""ONNX Runtime embedding backend (CPU): `embedding.backend: "onnx"` and the query path.

The sentence-transformers model (transformer, pooling, normalisation) is exported once, offline,
from the local model folder into a user cache (never into site-packages), written atomically:
  $CODETEACHER_CACHE_DIR | $XDG_CACHE_HOME/codeteacher | ~/.cache/codeteacher  /onnx/<name>-<key>/
holding model.onnx, tokenizer.json and meta.json. BERT-like graphs get ONNX Runtime's transformer
fusions (fused attention, skip-layernorm, bias-gelu); `quantize: "int8"` then quantizes the weights
per channel (per-tensor int8 loses too much: cosine ~0.86 to float32 on code text).
Running needs only onnxruntime and tokenizers; exporting also needs torch (installed) and onnx.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..contracts.errors import UserError
from ..contracts.settings import EmbeddingSettings
from .base import normalized, resolve_model_path

EXPORT_VERSION = 1  # bump when the export recipe changes: old cache entries are then ignored
_INSTALL_HINT = "pip install 'codeteacher[onnx]' (onnxruntime, onnx)"


def cache_root() -> Path:
    explicit = os.environ.get("CODETEACHER_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "codeteacher"


def _cache_dir(name: str, model_path: str, quantize: str) -> Path:
    """One folder per model files (path, size, mtime), recipe, quantization and ORT version."""
    import onnxruntime

    h = hashlib.sha256(f"{EXPORT_VERSION}\0{quantize}\0{onnxruntime.__version__}\0"
                       f"{model_path}".encode())
    root = Path(model_path)
    if root.is_dir():
        for f in sorted(p for p in root.rglob("*") if p.is_file()):
            st = f.stat()
            h.update(f"\0{f.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[-48:]
    return cache_root() / "onnx" / f"{slug}-{quantize}-{h.hexdigest()[:16]}"


def _export(model_path: str, quantize: str, dest: Path) -> None:
    """Export into a temporary sibling folder, then rename it into place (atomic)."""
    try:
        import onnx  # noqa: F401 - needed by the exporter and the quantizer
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise UserError(f"exporting the ONNX embedding model needs {exc.name}: "
                        f"{_INSTALL_HINT}") from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        # Eager attention exports the plain softmax(QK^T)V pattern that ORT's fusion recognises.
        st = SentenceTransformer(model_path, device="cpu", local_files_only=True,
                                 model_kwargs={"attn_implementation": "eager"}).eval()
        tok = st.tokenizer
        names = [n for n in ("input_ids", "attention_mask", "token_type_ids")
                 if n in tok.model_input_names]

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.st = st

            def forward(self, *inputs):
                return self.st(dict(zip(names, inputs)))["sentence_embedding"]

        sample = tok(["a short text", "a somewhat longer text with padding"], padding=True,
                     return_tensors="pt")
        axes = {n: {0: "batch", 1: "tokens"} for n in names}
        axes["sentence_embedding"] = {0: "batch"}
        raw = tmp / "raw.onnx"
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer and deprecation chatter
            torch.onnx.export(Wrapped(), tuple(sample[n] for n in names), str(raw),
                              input_names=names, output_names=["sentence_embedding"],
                              dynamic_axes=axes, opset_version=17, dynamo=False)
        graph = _fuse(raw, st, tmp)
        if quantize == "int8":
            import logging

            from onnxruntime.quantization import QuantType, quantize_dynamic

            logging.disable(logging.WARNING)  # "consider pre-processing" advice on the root logger
            try:
                quantize_dynamic(str(graph), str(tmp / "model.onnx"),
                                 weight_type=QuantType.QInt8, per_channel=True,
                                 extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
            finally:
                logging.disable(logging.NOTSET)
        else:
            graph.replace(tmp / "model.onnx")
        for f in tmp.glob("*.onnx"):
            if f.name != "model.onnx":
                f.unlink()
        tok.backend_tokenizer.save(str(tmp / "tokenizer.json"))
        cfg = st[0].auto_model.config if hasattr(st[0], "auto_model") else None
        dim_of = getattr(st, "get_embedding_dimension", None) or \
            st.get_sentence_embedding_dimension
        meta = {"inputs": names, "pad_id": tok.pad_token_id or 0, "pad_token": tok.pad_token,
                "do_lower_case": bool(getattr(st[0], "do_lower_case", False)),
                "max_positions": int(getattr(cfg, "max_position_embeddings", 512) or 512),
                "dim": int(dim_of()), "quantize": quantize,
                "source": model_path}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        try:
            tmp.rename(dest)
        except OSError:  # another process finished first: keep its copy
            if not (dest / "meta.json").is_file():
                raise
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - any export failure is a configuration problem
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"cannot export '{model_path}' to ONNX: {first}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fuse(raw: Path, st, tmp: Path) -> Path:
    """ORT's offline transformer fusions for BERT-like models; other graphs stay as exported."""
    cfg = getattr(getattr(st[0], "auto_model", None), "config", None)
    if getattr(cfg, "model_type", "") not in ("bert", "roberta", "xlm-roberta", "mpnet"):
        return raw
    import logging

    from onnxruntime.transformers import optimizer

    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
    opt = optimizer.optimize_model(str(raw), model_type="bert",
                                   num_heads=int(cfg.num_attention_heads),
                                   hidden_size=int(cfg.hidden_size), opt_level=1)
    out = tmp / "fused.onnx"
    opt.save_model_to_file(str(out))
    return out


def ensure_exported(settings: EmbeddingSettings) -> Path:
    """The cache folder for these settings, exporting the model first when it is absent."""
    path = resolve_model_path(settings.model)
    dest = _cache_dir(settings.model, path, settings.quantize)
    if not (dest / "meta.json").is_file():
        import sys

        # Once per model and ONNX Runtime version (scripts/setup.sh does it at set-up).
        print(f"exporting the embedding model to ONNX once, into {dest.parent} ...",
              file=sys.stderr, flush=True)
        _export(path, settings.quantize, dest)
    return dest


class OnnxEmbedder:
    def __init__(self, settings: EmbeddingSettings):
        from .base import model_id

        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise UserError(f"embedding.backend 'onnx' needs {exc.name}: {_INSTALL_HINT}") from None
        if settings.device not in ("cpu", "auto"):
            raise UserError(f"embedding.backend 'onnx' runs on the CPU only (device "
                            f"'{settings.device}'); use backend 'torch' for GPUs")
        folder = ensure_exported(settings)
        self.meta = json.loads((folder / "meta.json").read_text())
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=min(settings.max_seq_length,
                                                        self.meta["max_positions"]))
        self.tokenizer.no_padding()  # batches are padded here, after sorting by token count
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = len(os.sched_getaffinity(0))  # the cores we may use
        opts.inter_op_num_threads = 1
        # Idle workers sleep instead of spinning: on a 2-core machine that also runs other
        # work, spinning costs more than it saves (measured: batch 0.68x wall, query 0.70x).
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(str(folder / "model.onnx"), opts,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - e.g. a damaged cache entry
            raise UserError(f"cannot load ONNX embedding model {folder}: "
                            f"{str(exc).splitlines()[0]} (delete that folder to re-export)"
                            ) from None
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.batch_size = max(1, settings.batch_size)
        self.model_id = model_id(settings)
        self.dim = int(self.meta["dim"])

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1:  # queries: repeated ones (agents, evaluation) cost nothing
            return self._embed_one(texts[0]).reshape(1, -1)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        enc = self._tokenize(texts)
        # Batches of equal token counts: padding is compute for nothing (sorting by characters
        # instead left ~8% padding on an index's texts).
        order = sorted(range(len(texts)), key=lambda i: -len(enc[i].ids))
        for s in range(0, len(order), self.batch_size):
            batch = order[s:s + self.batch_size]
            out[batch] = self._forward([enc[i] for i in batch])
        return out

    @lru_cache(maxsize=1024)
    def _embed_one(self, text: str) -> np.ndarray:
        vec = self._forward(self._tokenize([text]))[0]
        vec.setflags(write=False)
        return vec

    def _tokenize(self, texts: list[str]) -> list:
        # Same preprocessing as sentence-transformers: strip, optional lower-casing.
        texts = [t.strip() for t in texts]
        if self.meta["do_lower_case"]:
            texts = [t.lower() for t in texts]
        return self.tokenizer.encode_batch(texts)

    def _forward(self, enc: list) -> np.ndarray:
        """Vectors of tokenized texts, padded to the longest of them (masked out)."""
        width = max(len(e.ids) for e in enc)
        ids = np.full((len(enc), width), self.meta["pad_id"], dtype=np.int64)
        mask = np.zeros((len(enc), width), dtype=np.int64)
        types = np.zeros((len(enc), width), dtype=np.int64)
        for row, e in enumerate(enc):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return normalized(self.session.run(None, {n: feed[n] for n in self.inputs})[0])


def main() -> int:
    """`python -m codeteacher.embedding.onnx`: export the default model now (set-up), so that
    no later command needs torch for it: float32 (questions to float indexes) and, where the
    settings ask ingest for ONNX int8, that recipe too. Prints the cache folders."""
    import sys

    from ..contracts.settings import load_settings
    from .base import resolve

    es = load_settings().embedding
    wanted = [es.model_copy(update={"backend": "onnx", "quantize": "none"})]
    ingest = resolve(es)
    if ingest.backend == "onnx" and ingest.quantize == "int8":
        wanted.append(ingest)
    try:
        for one in wanted:
            print(ensure_exported(one))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
