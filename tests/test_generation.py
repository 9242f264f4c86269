"""Generation backends: llama-cpp with the packaged GGUF, openai against real local servers,
vLLM / transformers behind their import and GPU checks; settings, presets and prompt modes."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from codeteacher.contracts.errors import UserError
from codeteacher.contracts.settings import load_settings
from codeteacher.generation import (
    BackendSettings,
    ChatRequest,
    GenerationSettings,
    make_generator,
    model_id_for,
    packaged_gguf_path,
)
from codeteacher.generation.prompts import (
    MODES,
    prompt_signature,
    prompt_signatures,
    render,
    template_path,
)

ROOT = Path(__file__).resolve().parent.parent
HELLO = [{"role": "user", "content": "Name one C++ container type."}]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def llama(**kw) -> BackendSettings:
    return BackendSettings(**{"backend": "llama-cpp", "context_size": 2048, "max_tokens": 48,
                              **kw})


# ---- settings, presets, prompts -------------------------------------------------------------

@pytest.mark.parametrize("name", ["local-llm.json", "cluster-vllm.json"])
def test_presets_are_valid_full_settings(name):
    s = load_settings(ROOT / "config" / "settings" / name)
    assert s.generation.answers.backend != "none"
    assert s.generation.explanations.backend == s.generation.answers.backend


def test_defaults_keep_indexing_model_free_and_answer_with_the_small_coder_model():
    """The library defaults are model-free; the shipped runtime_settings.json answers with the
    catalogue's Qwen2.5-Coder-0.5B (setup.sh installs it) and differs in nothing else."""
    gs = load_settings(ROOT / "runtime_settings.json").generation
    assert gs.explanations.backend == "none" and GenerationSettings().answers.backend == "none"
    assert gs.answers.backend == "llama-cpp" and gs.answers.model == "qwen2.5-coder-0.5b"
    shipped, defaults = gs.model_dump(), GenerationSettings().model_dump()
    shipped.pop("answers"), defaults.pop("answers")
    assert shipped == defaults


@pytest.mark.parametrize("name", ["qwen-coder-1.5b.json", "ollama-qwen7b.json"])
def test_model_presets_choose_an_answer_model(name):
    s = load_settings(ROOT / "config" / "settings" / name)
    assert s.generation.answers.backend in ("llama-cpp", "openai")
    assert s.generation.explanations.backend == "none"  # answers only


def test_unknown_generation_key_is_named(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"generation": {"answers": {"backend": "llama-cpp", "ctx": 1}}}))
    with pytest.raises(UserError, match="generation.answers.ctx"):
        load_settings(f)


def test_prompt_signatures_follow_template_version_and_mode(tmp_path):
    gs = GenerationSettings()
    sigs = prompt_signatures(gs)
    assert set(sigs) == set(MODES) and len(set(sigs.values())) == len(MODES)
    bumped = gs.model_copy(deep=True)
    bumped.prompts.module_level.version = 2
    assert prompt_signature(bumped, "module_level") != sigs["module_level"]
    assert prompt_signature(bumped, "file_level") == sigs["file_level"]
    own = tmp_path / "mine.txt"
    own.write_text(template_path("module_level.txt").read_text() + "\nBe brief.")
    bumped.prompts.module_level.template = str(own)
    assert prompt_signature(bumped, "module_level") not in sigs.values()


def test_templates_render_and_keep_braces_in_values():
    gs = GenerationSettings()
    msgs = render(gs, "chunk_explanation", {"kind": "function", "name": "f", "path": "a.cpp",
                                            "lines": "1-3", "context": "",
                                            "code": "int f() { return {1}; }"})
    assert msgs[0]["role"] == "system" and "int f() { return {1}; }" in msgs[1]["content"]
    for mode in MODES:  # every template is compact (small models prefer short prompts)
        assert len(template_path(getattr(gs.prompts, mode).template).read_text()) < 800
    with pytest.raises(UserError, match="placeholder"):
        render(gs, "final_answer", {"question": "q"})


# ---- llama-cpp ------------------------------------------------------------------------------

def test_missing_or_non_gguf_model_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="model file not found"):
        make_generator(llama(model=str(tmp_path / "absent.gguf")))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(UserError, match="not a GGUF"):
        make_generator(llama(model=str(bad)))
    assert packaged_gguf_path().read_bytes()[:4] == b"GGUF"


def test_none_backend_refuses_to_generate():
    gen = make_generator(BackendSettings())
    assert gen.name == "none" and model_id_for(BackendSettings()) == ""
    with pytest.raises(UserError, match="backend 'none'"):
        gen.generate([ChatRequest(messages=HELLO)])


@pytest.mark.llm
def test_llama_cpp_generates_counts_and_reports_overflow():
    gen = make_generator(llama(context_size=512))
    try:
        assert gen.model_id == model_id_for(llama()) == "llama-cpp:packaged:SmolLM2-135M-Instruct"
        assert 3 <= gen.count_tokens("std::vector<double> v;") <= 12
        ok, long = gen.generate([ChatRequest(messages=HELLO, max_tokens=16),
                                 ChatRequest(messages=[{"role": "user",
                                                        "content": "x " * 900}])])
    finally:
        gen.close()
    assert ok.text and ok.tokens_in > 0 and 0 < ok.tokens_out <= 16
    assert ok.finish_reason in ("stop", "length")
    assert long.finish_reason == "context_overflow" and not long.text


# ---- openai: a real llama.cpp server, and tiny real HTTP servers ----------------------------

@pytest.fixture(scope="module")
def llama_server():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(packaged_gguf_path()),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not start")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.llm
def test_openai_backend_against_real_server(llama_server):
    gen = make_generator(BackendSettings(backend="openai", base_url=llama_server,
                                         model="smollm2", context_size=2048, concurrency=2))
    try:
        out = gen.generate([ChatRequest(messages=HELLO, max_tokens=16),
                            ChatRequest(messages=[{"role": "user", "content": "Say yes."}],
                                        max_tokens=8)])
    finally:
        gen.close()
    assert len(out) == 2 and all(g.text and g.tokens_in > 0 for g in out)
    assert 0 < out[1].tokens_out <= 8 and gen.model_id == "openai:smollm2"


@pytest.mark.llm
def test_openai_backend_streams_against_real_server(llama_server):
    gen = make_generator(BackendSettings(backend="openai", base_url=llama_server,
                                         model="smollm2", context_size=2048))
    pieces: list[str] = []
    try:
        out = gen.stream(ChatRequest(messages=HELLO, max_tokens=16), pieces.append)
    finally:
        gen.close()
    assert len(pieces) > 1 and out.text == "".join(pieces).strip() and out.text
    assert 0 < out.tokens_out <= 16 and out.finish_reason in ("stop", "length")


class Scripted(BaseHTTPRequestHandler):
    """Answers from the server's script: ('sleep', s) | (status, body[, headers]) per request,
    in order."""

    def do_POST(self):  # noqa: N802 - http.server API
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.seen.append(self.headers.get("Authorization"))
        step = self.server.script.pop(0) if len(self.server.script) > 1 else self.server.script[0]
        if step[0] == "sleep":
            time.sleep(step[1])
            step = (200, OK_BODY)
        body = json.dumps(step[1]).encode()
        try:
            self.send_response(step[0])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (step[2] if len(step) > 2 else {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up (timeout test)

    def log_message(self, *args):
        pass


OK_BODY = {"choices": [{"message": {"role": "assistant", "content": "fine"},
                        "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 5, "completion_tokens": 1}}


@pytest.fixture
def scripted():
    servers = []

    def start(script):
        srv = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
        srv.daemon_threads = True
        srv.script, srv.seen = list(script), []
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv, f"http://127.0.0.1:{srv.server_address[1]}/v1"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def openai(url: str, **kw) -> BackendSettings:
    return BackendSettings(**{"backend": "openai", "base_url": url, "model": "m",
                              "retries": 1, "timeout_s": 5, **kw})


def test_openai_server_down_names_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"
    gen = make_generator(openai(url))
    with pytest.raises(UserError, match=f"{url}/chat/completions failed after 2 attempt"):
        gen.generate([ChatRequest(messages=HELLO)])


def test_openai_timeout_is_a_user_error(scripted):
    _, url = scripted([("sleep", 3)])
    gen = make_generator(openai(url, timeout_s=0.5, retries=0))
    with pytest.raises(UserError, match="timed out"):
        gen.generate([ChatRequest(messages=HELLO)])


def test_openai_retries_429_and_5xx_then_succeeds(scripted, monkeypatch):
    monkeypatch.setenv("CT_TEST_KEY", "sekrit")
    srv, url = scripted([(503, {}), (429, {}), (200, OK_BODY)])
    gen = make_generator(openai(url, retries=2, api_key_env="CT_TEST_KEY"))
    out = gen.generate([ChatRequest(messages=HELLO)])
    assert out[0].text == "fine" and out[0].tokens_in == 5
    assert srv.seen == ["Bearer sekrit"] * 3


def test_openai_honours_retry_after(scripted):
    """One retry helper for every client (contracts/http): the server's Retry-After wins over
    the 0.5 s first backoff."""
    srv, url = scripted([(429, {}, {"Retry-After": "1.5"}), (200, OK_BODY)])
    gen = make_generator(openai(url, retries=1))
    t0 = time.monotonic()
    assert gen.generate([ChatRequest(messages=HELLO)])[0].text == "fine"
    assert time.monotonic() - t0 >= 1.4 and len(srv.seen) == 2


def test_openai_context_error_and_auth_error(scripted):
    _, url = scripted([(400, {"error": {"message": "exceeds the context window"}})])
    out = make_generator(openai(url)).generate([ChatRequest(messages=HELLO)])
    assert out[0].finish_reason == "context_overflow"
    _, url = scripted([(401, {"error": "bad key"})])
    with pytest.raises(UserError, match="HTTP 401"):
        make_generator(openai(url)).generate([ChatRequest(messages=HELLO)])


# ---- vLLM and transformers: real code behind import / GPU checks -----------------------------

def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(_cuda(), reason="checks the no-GPU message; this machine has a GPU")
def test_vllm_without_gpu_is_a_clear_user_error():
    with pytest.raises(UserError, match="CUDA GPU"):
        make_generator(BackendSettings(backend="vllm"))


@pytest.mark.gpu
def test_vllm_generates_on_gpu():
    pytest.importorskip("vllm")
    if not _cuda():
        pytest.skip("no CUDA GPU")
    model = os.environ.get("CODETEACHER_VLLM_MODEL", "packaged:SmolLM2-135M-Instruct")
    gen = make_generator(BackendSettings(backend="vllm", model=model, context_size=2048))
    out = gen.generate([ChatRequest(messages=HELLO, max_tokens=16)] * 3)
    assert len(out) == 3 and all(g.text for g in out)


@pytest.mark.gpu
def test_transformers_on_gpu():
    pytest.importorskip("gguf")
    if not _cuda():
        pytest.skip("no CUDA GPU")
    gen = make_generator(BackendSettings(backend="transformers", device="cuda",
                                         context_size=2048, max_tokens=16))
    out = gen.generate([ChatRequest(messages=HELLO, max_tokens=16)] * 2)
    assert all(g.text and g.tokens_out <= 16 for g in out)


@pytest.mark.llm
@pytest.mark.timeout(600)  # dequantising the GGUF on CPU: ~30 s on 2 idle cores
def test_transformers_on_cpu_with_packaged_gguf():
    pytest.importorskip("gguf")
    gen = make_generator(BackendSettings(backend="transformers", device="cpu",
                                         context_size=2048, max_tokens=16))
    out = gen.generate([ChatRequest(messages=HELLO, max_tokens=16),
                        ChatRequest(messages=[{"role": "user", "content": "Say hi."}],
                                    max_tokens=8, stop=["!"])])
    assert out[0].text and out[1].tokens_out <= 8


def test_transformers_missing_directory_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        make_generator(BackendSettings(backend="transformers", model=str(tmp_path / "nope")))
