"""Each learner's edition in the workshop room (fast tier, no hub): the spawn form's choice, the
configuration layer it adds, and nbgrader reading the Japanese release for fetch only."""
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from grader.workshop import editions  # noqa: E402
from grader.workshop import state as workshop_state  # noqa: E402


def test_the_form_offers_both_editions_and_keeps_the_last_choice():
    page = editions.options_form("ja")
    assert 'value="en"' in page and 'value="ja"' in page and "日本語" in page
    assert 'value="ja" checked' in page and 'value="en" checked' not in page
    assert 'value="en" checked' in editions.options_form()


def test_only_a_known_edition_is_taken_from_a_form_or_an_api_body():
    assert editions.options_from_form({"edition": ["ja"]}) == {"edition": "ja"}
    assert editions.options_from_form({}) == {"edition": "en"}
    for junk in ("../../etc", "JA", "", None, ["ja"]):
        assert editions.options_from_form({"edition": [junk]}) == {"edition": "en"}
        assert editions.chosen({"edition": junk}) == "en"
    assert editions.chosen(None) == "en" and editions.chosen({"edition": "ja"}) == "ja"


def test_the_japanese_layer_comes_first():
    assert editions.config_path("ja", "/s/learner-config") == ["/s/learner-config/ja", "/s/learner-config"]
    assert editions.config_path("en", "/s/learner-config") == ["/s/learner-config"]


def _learner_config(tmp_path: Path) -> Path:
    """The learner configuration as `make workshop` lays it out (grader.workshop.state.lay_out)."""
    import shutil

    config = tmp_path / "learner-config"
    shutil.copytree(workshop_state.LEARNER_JUPYTER_CONFIG, config)
    (config / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.course_id = 'ray-train-tune'\nc.Exchange.root = {str(tmp_path / 'exchange')!r}\n")
    (config / "ja" / "nbgrader_config.py").write_text(editions.fetch_config(tmp_path / "exchange-ja"))
    return config


def _exchange_roots(config_path: list[str], cwd: Path) -> dict:
    """Where each of nbgrader's exchange actions looks, with the configuration the learner's server
    loads (nbgrader's assignment-list handler: jupyter_config_path() with the cwd first)."""
    import subprocess

    probe = (
        "from jupyter_core.paths import jupyter_config_path\n"
        "from nbgrader.apps import NbGrader\n"
        "from nbgrader.coursedir import CourseDirectory\n"
        "from nbgrader.auth import Authenticator\n"
        "from nbgrader.exchange import ExchangeFactory\n"
        "import json, os\n"
        "paths = jupyter_config_path(); paths.insert(0, os.getcwd())\n"
        "app = NbGrader(); app.config_file_paths.append(paths); app.load_config_file()\n"
        "factory = ExchangeFactory(config=app.config)\n"
        "coursedir = CourseDirectory(config=app.config); auth = Authenticator(config=app.config)\n"
        "roots = {kind: getattr(factory, kind)(coursedir=coursedir, authenticator=auth, config=app.config).root\n"
        "         for kind in ('fetch_assignment', 'submit', 'list', 'fetch_feedback')}\n"
        "print(json.dumps(roots))\n")
    env = {**os.environ, "JUPYTER_CONFIG_PATH": os.pathsep.join(config_path)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_a_japanese_learner_fetches_the_japanese_release_and_submits_to_the_one_inbound(tmp_path):
    config = _learner_config(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    exchange, exchange_ja = str(tmp_path / "exchange"), str(tmp_path / "exchange-ja")
    ja = _exchange_roots(editions.config_path("ja", str(config)), home)
    assert ja == {"fetch_assignment": exchange_ja, "submit": exchange, "list": exchange,
                  "fetch_feedback": exchange}
    en = _exchange_roots(editions.config_path("en", str(config)), home)
    assert set(en.values()) == {exchange}


def test_the_japanese_layer_sets_jupyterlabs_locale(tmp_path, monkeypatch):
    """The overrides JupyterLab's settings API starts from (jupyterlab_server reads the labconfig
    folders of JUPYTER_CONFIG_PATH): ja_JP with the ja layer, nothing without it."""
    from jupyterlab_server.settings_utils import _get_overrides

    plugin = "@jupyterlab/translation-extension:plugin"
    config = str(workshop_state.LEARNER_JUPYTER_CONFIG)
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", os.pathsep.join(editions.config_path("ja", config)))
    assert _get_overrides(str(tmp_path))[0][plugin]["locale"] == "ja_JP"
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", os.pathsep.join(editions.config_path("en", config)))
    assert plugin not in _get_overrides(str(tmp_path))[0]


def test_the_language_pack_is_installed():
    from jupyterlab_server.translation_utils import get_language_packs

    packs, _ = get_language_packs("en")
    assert "ja_JP" in packs, sorted(packs)


def test_a_lab_held_back_in_japanese_is_staged_in_english(tmp_path, capsys):
    root, course = tmp_path / "clone", tmp_path / "course"
    for folder, text in (("notebooks", "english"), ("notebooks-ja", "japanese")):
        (root / folder / "00_a").mkdir(parents=True)
        (root / folder / "00_a" / "00_a.ipynb").write_text(text)
    (root / "notebooks" / "01_b").mkdir()
    (root / "notebooks" / "01_b" / "01_b.ipynb").write_text("english")
    assert editions.stage_release(course, root, "00_a") == root / "notebooks-ja" / "00_a"
    assert (course / "release-ja" / "00_a" / "00_a.ipynb").read_text() == "japanese"
    assert editions.stage_release(course, root, "01_b") == root / "notebooks" / "01_b"
    assert (course / "release-ja" / "01_b" / "01_b.ipynb").read_text() == "english"
    assert "01_b: no Japanese copy" in capsys.readouterr().out


def test_the_japanese_release_has_no_inbound_and_a_sticky_root(tmp_path):
    exchange_ja = tmp_path / "exchange-ja"
    (exchange_ja / "ray-train-tune" / "inbound").mkdir(parents=True)
    (exchange_ja / "ray-train-tune" / "outbound" / "00_a").mkdir(parents=True)
    os.chmod(exchange_ja, 0o777)
    editions.close_release(exchange_ja, "ray-train-tune")
    assert not (exchange_ja / "ray-train-tune" / "inbound").exists()
    assert (exchange_ja / "ray-train-tune" / "outbound" / "00_a").is_dir()
    assert oct(exchange_ja.stat().st_mode & 0o7777) == "0o1777"  # nbgrader's fetch wants it writable
