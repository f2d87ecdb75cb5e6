"""The edition a submission was handed out in, and what it changes: only the language of the words
around the grades, never a grade.

The Japanese edition's notebooks carry ``{"raylab": {"edition": "ja"}}`` in their notebook-level
metadata (written by ``grader.authoring.editions.publish``; cells, cell ids and grade ids are the
English copy's byte for byte). For such a submission the learner's kernel gets ``RAYLAB_LANG=ja``
(:func:`kernel_env`), so raylab's checks and hints raise and print in Japanese, and the feedback
page's fixed words (nbgrader's feedback template, the course's pointer to reread) are Japanese
(:func:`feedback_args`). A missing
or unknown marker means English. The marker is the learner's to edit: it can change a message's
language, not what runs or how it is scored (the checks decide by values; their messages come from
``src/raylab/locale``, part of every proof key).
"""
from __future__ import annotations

from pathlib import Path

LANGUAGES = ("ja",)
MARKER = "raylab"

# nbgrader 0.9.6's feedback template (server_extensions/formgrader/templates/feedback/index.html.j2):
# each fixed English fragment and its Japanese. tests/grader/test_edition_feedback.py checks that
# every fragment is still there, so an nbgrader upgrade cannot leave the page half English unnoticed.
FEEDBACK_WORDS = {
    "ja": [
        (">Test cell</a>", ">テストセル</a>"),
        (">Coding free-response</a>", ">コードの自由回答</a>"),
        (">Written response</a>", ">記述式の回答</a>"),
        (">Task</a>", ">課題</a>"),
        (">Comment</a>", ">コメント</a>"),
        ("Late submission penalty", "提出遅れによる減点"),
        ("Score: ", "得点: "),
        ("(Top)", "(先頭へ)"),
        ("Student's answer", "あなたの回答"),
        ("Student's task", "あなたの課題"),
        ("Grade cell: ", "採点セル: "),
        ("Task: <code>", "課題: <code>"),
        ("<b>Comments:</b>", "<b>コメント:</b>"),
    ],
}


def language(nb) -> str:
    """``"ja"`` for a notebook of the Japanese edition, ``"en"`` otherwise."""
    try:
        lang = nb.metadata.get(MARKER, {}).get("edition")
    except AttributeError:
        return "en"
    return lang if lang in LANGUAGES else "en"


def marked(nb, lang: str):
    """``nb`` with the edition marker of ``lang`` (in place; returns it)."""
    nb.metadata[MARKER] = {"edition": lang}
    return nb


def kernel_env(lang: str) -> dict:
    """What the learner's kernel needs besides the allow-list for a submission in ``lang``."""
    return {"RAYLAB_LANG": lang} if lang in LANGUAGES else {}


def nbgrader_feedback_template() -> Path:
    import nbgrader

    return Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates" / "feedback"


def translated_feedback_template(lang: str) -> str:
    text = (nbgrader_feedback_template() / "index.html.j2").read_text(encoding="utf-8")
    for english, words in FEEDBACK_WORDS[lang]:
        text = text.replace(english, words)
    return text


def feedback_args(lang: str, jupyter_dir: Path) -> list[str]:
    """nbgrader ``generate_feedback`` options that render the feedback page's own words in
    ``lang`` (none for English): a translated copy of nbgrader's template, written where nbconvert
    looks for templates in the grading's Jupyter folder (``JUPYTER_PATH``)."""
    if lang not in LANGUAGES:
        return []
    name = f"feedback_{lang}"
    target = jupyter_dir / "nbconvert" / "templates" / name
    target.mkdir(parents=True, exist_ok=True)
    (target / "index.html.j2").write_text(translated_feedback_template(lang), encoding="utf-8")
    (target / "conf.json").write_text((nbgrader_feedback_template() / "conf.json").read_text())
    return [f"--HTMLExporter.template_name={name}", f"--HideGradeCellTracebacks.language={lang}"]
