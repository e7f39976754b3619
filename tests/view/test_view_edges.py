"""``levelfield view`` at its edges: the token's redirect stays on the view, and no file outside the served folders is served."""

import os

import pytest

import levelfield as lf
from _view_runs import CASES, METRICS, home_agent

pytest.importorskip("starlette", reason="levelfield view needs the view extra")
import httpx  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from levelfield.view import create_app, start  # noqa: E402

TOKEN = "s3cret-token-42"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    root = tmp_path_factory.mktemp("view") / "runs"
    lf.evaluate(CASES, home_agent(2), METRICS, out=root / "v1", progress=False)
    with start([root], token=TOKEN) as server:
        yield server.url


@pytest.mark.parametrize("path", ["/%2F%2Fevil.example", "//evil.example/", "/%2F/evil.example", "/%5C%5Cevil.example",
                                  "/%5Cevil.example", "/https:%2F%2Fevil.example"])
def test_the_token_redirect_never_leaves_the_view(guarded, path):
    # Sent as raw bytes on the wire, as a link would: httpx would otherwise normalise the path.
    with httpx.Client(base_url=guarded) as browser:
        request = browser.build_request("GET", guarded + "/")
        request.url = request.url.copy_with(raw_path=(path + f"?token={TOKEN}").encode())
        response = browser.send(request, follow_redirects=False)
    assert response.status_code == 303
    location = response.headers["location"]
    target = httpx.URL(guarded).join(location)
    assert target.host == "127.0.0.1" and not location.startswith("//") and "\\" not in location, location


def test_the_token_redirect_keeps_the_views_own_path_and_query(guarded):
    response = httpx.get(guarded + "/run", params={"run": "runs/v1", "token": TOKEN}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/run?run=runs%2Fv1"


def test_a_symlinked_runs_file_pointing_outside_the_served_folder_is_not_served(tmp_path):
    secret = tmp_path / "elsewhere"
    lf.evaluate(CASES, home_agent(3), METRICS, out=secret, progress=False)
    served = tmp_path / "served"
    lf.evaluate(CASES, home_agent(2), METRICS, out=served / "mine", progress=False)
    (served / "stolen").mkdir()
    os.symlink(secret / "runs.jsonl", served / "stolen" / "runs.jsonl")
    app = TestClient(create_app([served], allowed_hosts=["testserver"], rescan=0))
    listed = app.get("/").text
    assert 'data-run="served/mine"' in listed and "stolen" not in listed
    assert app.get("/run", params={"run": "served/stolen"}).status_code == 404


def test_a_symlink_that_stays_inside_the_served_folder_is_still_served(tmp_path):
    served = tmp_path / "served"
    lf.evaluate(CASES, home_agent(2), METRICS, out=served / "mine", progress=False)
    (served / "alias").mkdir()
    os.symlink(served / "mine" / "runs.jsonl", served / "alias" / "runs.jsonl")
    app = TestClient(create_app([served], allowed_hosts=["testserver"], rescan=0))
    assert app.get("/run", params={"run": "served/alias"}).status_code == 200
