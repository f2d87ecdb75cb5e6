"""Each learner's edition in the room: English or Japanese (``notebooks-ja/``).

A learner picks it on the hub's spawn page (:func:`options_form`); their server then gets
``RAYLAB_LANG`` (raylab's messages) and the ``ja/`` layer of the learner configuration first on
``JUPYTER_CONFIG_PATH``: JupyterLab's language pack locale, and an nbgrader fetch that reads the
Japanese release (``exchange-ja/``, :func:`stage_release`) instead of the English one. Listing,
submitting and feedback keep the one exchange: a Japanese notebook has the English one's file
name, cell ids and grade ids, so it is collected and graded under the same lab.
"""
from __future__ import annotations

import html
import os
import shutil
from pathlib import Path

EDITIONS = {"en": "English", "ja": "日本語"}
DEFAULT = "en"
FOLDERS = {"en": "notebooks", "ja": "notebooks-ja"}


def chosen(user_options: dict | None) -> str:
    """The edition a spawn asked for; anything but a known edition (a hand-made API body) is English."""
    value = (user_options or {}).get("edition")
    return value if isinstance(value, str) and value in EDITIONS else DEFAULT


def options_from_form(formdata: dict) -> dict:
    return {"edition": chosen({"edition": (formdata.get("edition") or [DEFAULT])[0]})}


def options_form(previous: str = DEFAULT) -> str:
    """The spawn page's choice, the learner's last choice selected."""
    rows = []
    for code, label in EDITIONS.items():
        checked = " checked" if code == previous else ""
        rows.append(f'<label style="margin-right:2em"><input type="radio" name="edition" '
                    f'value="{code}"{checked}> {html.escape(label)}</label>')
    return ('<p>Labs and messages in / 教材とメッセージの言語:</p>\n<div class="form-group">'
            + "".join(rows) + "</div>")


def config_path(edition: str, learner_config: str) -> list[str]:
    """The learner's Jupyter configuration folders, the first winning."""
    return ([os.path.join(learner_config, "ja")] if edition == "ja" else []) + [learner_config]


def fetch_config(exchange_ja: Path) -> str:
    """The ``ja/`` layer's nbgrader configuration: fetch from the Japanese release; list, submit and
    fetch feedback go on using the course's exchange (``Exchange.root`` of the layer below)."""
    return ("c = get_config()  # noqa: F821\n"
            f"c.ExchangeFetchAssignment.root = {str(exchange_ja)!r}\n")


def stage_release(course: Path, root: Path, lab: str) -> Path:
    """Copy ``lab``'s Japanese learner folder into the course folder's ``release-ja/`` (the English
    one where ``make release`` held the Japanese copy back); return where it came from."""
    origin = root / FOLDERS["ja"] / lab
    if not origin.is_dir():
        origin = root / FOLDERS["en"] / lab
        print(f"[workshop] {lab}: no Japanese copy in {FOLDERS['ja']}/; Japanese learners get the English one")
    dest = course / "release-ja" / lab
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(origin, dest)
    return origin


def close_release(exchange_ja: Path, course_id: str) -> None:
    """nbgrader's release makes an inbound anyone may write to: submissions go to the course's one
    inbound, so there is none here. The root stays writable, as nbgrader's fetch insists, with the
    sticky bit like the course's exchange: the course's folder in it is root's, read-only to learners."""
    shutil.rmtree(exchange_ja / course_id / "inbound", ignore_errors=True)
    os.chmod(exchange_ja, 0o1777)
