"""Online sources against a real HTTP server on 127.0.0.1 serving recorded responses."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from codeteacher.contracts.errors import UserError
from codeteacher.contracts.settings.papers import PaperOnlineSettings
from codeteacher.papers.cli import main as papers_main
from codeteacher.papers.library import Library
from codeteacher.papers.model import PaperRecord
from codeteacher.papers.online import (
    ArxivClient,
    CrossrefClient,
    OnlineError,
    OpenAlexClient,
    Resolver,
    enrich_library,
)

DATA = Path(__file__).resolve().parent / "data" / "papers"


# Any connection to a non-loopback address fails the test (fixture in conftest.py).
pytestmark = pytest.mark.usefixtures("no_network")


class Recorded:
    """Routes "METHOD path?query" prefixes to a list of (status, headers, file or body);
    each request consumes the next response, the last one repeats."""

    def __init__(self):
        self.routes: dict[str, list[tuple[int, dict, str]]] = {}
        self.log: list[str] = []

    def add(self, key: str, *responses: tuple[int, dict, str]) -> None:
        self.routes[key] = list(responses)

    def respond(self, path: str, raw: str) -> tuple[int, dict, bytes]:
        self.log.append(raw)
        for key in sorted(self.routes, key=len, reverse=True):
            if path.startswith(key):
                queue = self.routes[key]
                status, headers, body = queue.pop(0) if len(queue) > 1 else queue[0]
                data = (DATA / body).read_bytes() if (DATA / body).is_file() else body.encode()
                return status, headers, data
        return 404, {}, b'{"error": "not recorded"}'


@pytest.fixture
def server():
    recorded = Recorded()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server API
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            key = unquote(parts.path)
            if "id_list" in query:
                key += "?id_list=" + query["id_list"][0]
            status, headers, body = recorded.respond(key, self.path)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    recorded.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield recorded
    httpd.shutdown()
    httpd.server_close()


def online(server, tmp_path, **kw) -> PaperOnlineSettings:
    values = dict(enabled=True, mailto="tests@example.org", openalex_url=f"{server.base}/oa",
                  crossref_url=f"{server.base}/cr", arxiv_url=f"{server.base}/ax/query",
                  max_retries=2, backoff_s=0.01, max_backoff_s=2.0, min_interval_s=0.0,
                  cache_dir=str(tmp_path / "cache"))
    values.update(kw)
    return PaperOnlineSettings(**values)


HS_OA = "/oa/works/doi:10.6028/jres.049.044"
HS_CR = "/cr/works/10.6028/jres.049.044"


def test_off_by_default():
    assert PaperOnlineSettings().enabled is False
    with pytest.raises(UserError, match="disabled"):
        Resolver(PaperOnlineSettings())


def test_openalex_crossref_arxiv_parse_recorded_works(server, tmp_path):
    s = online(server, tmp_path)
    server.add(HS_OA, (200, {}, "openalex_work_hestenes.json"))
    server.add(HS_CR, (200, {}, "crossref_work_hestenes.json"))
    server.add("/ax/query?id_list=2205.11052", (200, {}, "arxiv_2205.11052.xml"))
    oa = OpenAlexClient(s).work("doi", "10.6028/jres.049.044")
    assert (oa.title, oa.year, oa.citation_count) == (
        "Methods of conjugate gradients for solving linear systems", 1952, 9876)
    assert oa.ids == {"doi": "10.6028/jres.049.044", "openalex": "W2029573958"}
    assert oa.authors == ["Hestenes, Magnus R.", "Stiefel, Eduard"]
    assert oa.abstract.startswith("An iterative algorithm is given for solving a system Ax = k")
    assert "Conjugate gradient method" in oa.keywords
    cr = CrossrefClient(s).work("doi", "10.6028/jres.049.044")
    assert cr.venue == "Journal of Research of the National Bureau of Standards"
    assert cr.abstract.startswith("An iterative algorithm") and "<jats" not in cr.abstract
    assert cr.citation_count == 5120 and cr.authors[0] == "Hestenes, M.R."
    ax = ArxivClient(s).work("arxiv", "2205.11052")
    assert ax.title.startswith("Scaling and performance portability of the particle-in-cell")
    assert "  " not in ax.title and ax.year == 2022
    assert ax.ids == {"arxiv": "2205.11052", "doi": "10.1137/1.9781611977967.3"}
    assert ax.authors[0] == "Muralikrishnan, Sriramkrishnan"
    assert all("mailto=tests%40example.org" in u for u in server.log if not u.startswith("/ax"))


def test_retry_after_429_then_success_and_cache(server, tmp_path):
    waits = []
    s = online(server, tmp_path)
    server.add(HS_OA, (429, {"Retry-After": "1"}, '{"error": "slow down"}'),
               (503, {}, "busy"), (200, {}, "openalex_work_hestenes.json"))
    client = OpenAlexClient(s, sleep=waits.append)
    rec = client.work("doi", "10.6028/jres.049.044")
    assert rec.title.startswith("Methods of conjugate")
    assert client.requests == 3 and waits[:2] == [1.0, 0.02]  # Retry-After, then backoff x2
    again = OpenAlexClient(s, sleep=waits.append)
    assert again.work("doi", "10.6028/jres.049.044").title == rec.title
    assert again.requests == 0  # served from the on-disk cache
    assert len([p for p in server.log if p.startswith(HS_OA)]) == 3


def test_retry_after_is_capped_and_gives_up_with_reason(server, tmp_path):
    waits = []
    s = online(server, tmp_path, max_retries=1, max_backoff_s=0.5)
    server.add(HS_OA, (429, {"Retry-After": "3600"}, "{}"))
    with pytest.raises(OnlineError, match=r"openalex: HTTP 429 after 2 attempts"):
        OpenAlexClient(s, sleep=waits.append).work("doi", "10.6028/jres.049.044")
    assert waits == [0.5]


@pytest.mark.parametrize("route, body, source, message", [
    (HS_OA, "openalex_malformed.json", "openalex", "malformed response (not JSON"),
    (HS_CR, "crossref_malformed.json", "crossref", "malformed response (no work message)"),
    ("/ax/query?id_list=2205.11052", "arxiv_malformed.xml", "arxiv", "malformed response"),
    ("/ax/query?id_list=2205.11052", "arxiv_empty.xml", "arxiv", "no entry for arXiv:2205.11052"),
])
def test_malformed_bodies_are_errors_not_empty_results(server, tmp_path, route, body, source,
                                                       message):
    s = online(server, tmp_path)
    server.add(route, (200, {}, body))
    client = {"openalex": OpenAlexClient, "crossref": CrossrefClient,
              "arxiv": ArxivClient}[source](s)
    scheme, value = ("arxiv", "2205.11052") if source == "arxiv" else ("doi",
                                                                      "10.6028/jres.049.044")
    with pytest.raises(OnlineError) as err:
        client.work(scheme, value)
    assert err.value.source == source and message in str(err.value)
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def test_arxiv_error_entry(server, tmp_path):
    server.add("/ax/query?id_list=2101.00001", (200, {}, "arxiv_error.xml"))
    with pytest.raises(OnlineError, match="arXiv reports an error"):
        ArxivClient(online(server, tmp_path)).work("arxiv", "2101.00001")


def test_resolver_records_a_clear_error_per_source(server, tmp_path):
    s = online(server, tmp_path)
    server.add(HS_OA, (500, {}, "oops"))
    server.add(HS_CR, (200, {}, "crossref_work_hestenes.json"))
    resolver = Resolver(s, sleep=lambda _: None)
    res = resolver.resolve("https://doi.org/10.6028/JRES.049.044")
    assert res.sources == ["crossref"] and res.record.citation_count == 5120
    assert res.errors == {"openalex": f"HTTP 500 after 3 attempts ({server.base}{HS_OA})"}
    server.add(HS_CR, (404, {}, "{}"))
    server.add("/cr/works/10.1234/none", (404, {}, "{}"))
    miss = resolver.resolve("10.1234/none")
    assert miss.record is None and set(miss.errors) == {"openalex", "crossref"}
    assert resolver.resolve("not an id").errors == {
        "input": "not a DOI, arXiv, OpenAlex or PubMed id: 'not an id'"}
    resolver.close()


def test_non_loopback_calls_fail(tmp_path):
    s = PaperOnlineSettings(enabled=True, openalex_url="http://api.example.org", max_retries=0,
                            cache_dir="")
    with pytest.raises(OnlineError, match="connection failed"):
        OpenAlexClient(s).work("doi", "10.6028/jres.049.044")


def test_enrich_library_and_cli(server, tmp_path, capsys):
    server.add(HS_OA, (200, {}, "openalex_work_hestenes.json"))
    server.add(HS_CR, (200, {}, "crossref_work_hestenes.json"))
    server.add("/oa/works/doi:10.48550/arXiv.1604.03155", (200, {}, "openalex_work_vico.json"))
    server.add("/ax/query?id_list=1604.03155", (200, {}, "arxiv_empty.xml"))
    db = tmp_path / "papers.sqlite"
    with Library.open(db, create=True) as lib:
        lib.add([PaperRecord(key="hs", title="Methods of conjugate gradients for solving "
                             "linear systems", year=1952, ids={"doi": "10.6028/jres.049.044"}),
                 PaperRecord(key="nodoi", title="Some unpublished notes", year=2001)])
        report = enrich_library(lib, online(server, tmp_path), add_refs=["arXiv:1604.03155"])
        assert report.enriched == ["hs"] and report.unchanged == ["nodoi"]
        assert report.added == ["vico2016fast"]
        assert report.errors == {"arXiv:1604.03155": {"arxiv": "no entry for arXiv:1604.03155"}}
        hs = lib.get("hs")
        assert hs.citation_count == 9876 and hs.ids["openalex"] == "W2029573958"
        assert hs.sources["abstract"] == "openalex" and hs.title.startswith("Methods")
        vico = lib.get("arXiv:1604.03155")
        assert vico.ids["doi"] == "10.1016/j.jcp.2016.07.028" and vico.year == 2016
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"papers": {"online": online(server, tmp_path).model_dump()}}))
    assert papers_main(["papers", "enrich", "hs", "--library", str(db), "--settings",
                        str(settings), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["errors"] == {} and out["unchanged"] == ["hs"]  # cached, nothing new
    assert papers_main(["papers", "enrich", "--library", str(db), "--settings",
                        str(settings)]) == 0
    out = capsys.readouterr().out  # vico's DOI is not recorded: reported per source
    assert "vico2016fast: openalex: not found" in out and "vico2016fast: crossref: not found" in out
    assert papers_main(["papers", "enrich", "--library", str(db)]) == 2
    assert "disabled" in capsys.readouterr().err
