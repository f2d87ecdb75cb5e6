"""nbgrader preprocessors the course adds to the stock pipeline.

- :class:`StderrToStdout` (autograde): nbgrader scores a test cell 0 if *anything* appears on
  stderr, and Ray writes log lines from background threads into whichever cell is running. Our test
  cells signal failure only by raising, so stderr text in a grade cell is relabelled as stdout:
  still visible in the feedback, no longer a zero. Error outputs are untouched.
- :class:`HideGradeCellTracebacks` (feedback): IPython tracebacks quote the source lines around the
  failing ``assert``, which would leak hidden tests. Keep only the exception type and message
  (and a pointer to reread, in the submission's language: ``grader.grading.edition``).
"""
from __future__ import annotations

import nbformat
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode


class StderrToStdout(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and utils.is_grade(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream" and output.get("name") == "stderr":
                    output["name"] = "stdout"
        return cell, resources


class HideGradeCellTracebacks(NbGraderPreprocessor):
    """Feedback: a failed test cell shows its exception type and message, plus a hint.

    Course checks carry their own ``Hint:``; any other failure (``NotImplementedError``, a
    ``NameError``...) gets a pointer to the section heading above the exercise.
    """

    # The submission's edition (grader.grading.edition sets it for generate_feedback).
    language = Unicode("en", help="en or ja: the language of the pointer to reread").tag(config=True)
    HINT_PREFIXES = ("Hint:", "ヒント:")
    INTRODUCTION = {"en": "the lab's introduction", "ja": "ラボの冒頭"}
    GENERIC_HINT = {"en": 'Hint: reread "{section}" and run the visible checks again.',
                    "ja": "ヒント: 「{section}」を読み直し、表示されているチェックをもう一度実行してください。"}

    def preprocess(self, nb, resources):
        lang = self.language if self.language in self.GENERIC_HINT else "en"
        section = self.INTRODUCTION[lang]
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                headings = [l.lstrip("#").strip() for l in cell.source.splitlines() if l.startswith("#")]
                if headings:
                    section = headings[-1]
            elif utils.is_grade(cell):
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "error":
                        text = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
                        if not any(prefix in text for prefix in self.HINT_PREFIXES):
                            text += "\n" + self.GENERIC_HINT[lang].format(section=section)
                        output["traceback"] = text.splitlines()
        return nb, resources


# --- Tamper evidence for test cells -------------------------------------------------------------
# The learner's code and the tests run in one kernel, so learner code can try to make a failing
# test cell look clean, e.g. with an IPython custom exception handler that swallows the error.
# Before execution each test cell gets a last line that prints a per-run random token; after
# execution a test cell that shows neither an error nor its token did not run to completion, and
# gets an error output instead (scoring 0). The token and line are removed again before saving.
#
# Each test cell also gets a first line that reports, with the token, the mechanisms registered
# in the kernel at that moment that can change how the cell runs (input and AST transformers,
# event hooks from outside IPython, a custom exception handler, patched shell methods, a tracer,
# replaced builtins, module functions replaced by notebook code). A non-empty report becomes a
# visible "[grader]" line in the cell and a review flag (grader/tamper_scan.output_flags). This
# runs inside the kernel, so a learner who targets it can forge it; the static scan of the learner's
# cells (grader/grading/tamper_scan.py), which runs outside the kernel, is the guarantee; this is a second net.
_SENTINEL_PREFIX = "__raylab_test_cell_completed__"
STATE_LINE = "[grader] registered before this test cell ran: "
_PROBE = r"""
import sys, builtins, types, json
ip = __import__('IPython').get_ipython()
f = []
names = [getattr(t, '__name__', type(t).__name__) for t in ip.input_transformers_cleanup]
if names != ['leading_empty_lines', 'leading_indent', 'PromptStripper', 'PromptStripper']:
    f.append('an input transformer (cleanup)')
if ip.input_transformers_post: f.append('an input transformer')
if ip.ast_transformers: f.append('an AST transformer')
main = sys.modules['__main__'].__dict__
def notebook_code(obj):  # defined in the notebook (or a bare builtin), not by an installed package
    return str(getattr(obj, '__module__', '') or '') in ('', '__main__', '__mp_main__', 'builtins')
for ev, cbs in ip.events.callbacks.items():
    for cb in cbs:
        if notebook_code(cb): f.append('an event hook (' + ev + ')')
if ip.custom_exceptions and notebook_code(getattr(ip.CustomTB, '__func__', ip.CustomTB)): f.append('a custom exception handler')
for m in ('showtraceback', '_showtraceback', 'run_cell', 'run_ast_nodes', 'run_code', 'transform_cell'):
    v = vars(ip).get(m)
    if v is not None and notebook_code(getattr(v, '__func__', v)): f.append('a patched shell method (' + m + ')')
if sys.gettrace() or sys.getprofile(): f.append('a tracer')
# Ray itself replaces print in the driver (tqdm_ray once worker logs arrive; Train's redirect in
# workers): those exact functions are Ray's, not the learner's.
rays = set()
for mod_name, attr in (('ray.experimental.tqdm_ray', 'safe_print'),
                       ('ray.train.v2._internal.logging.patch_print', 'redirected_print')):
    fn = getattr(sys.modules.get(mod_name), attr, None)
    if fn is not None: rays.add(id(fn))
for n in ('print', 'isinstance', 'len', 'abs', 'round', 'sum', 'min', 'max', 'all', 'any', 'sorted',
          'float', 'int', 'str', 'repr', 'hasattr', 'getattr', 'type', 'set', 'list', 'dict', 'range',
          'zip', 'AssertionError', 'Exception', 'exec', '__import__'):
    v = getattr(builtins, n, None)
    if id(v) not in rays and not isinstance(v, (types.BuiltinFunctionType, type)): f.append('a replaced builtin (' + n + ')')
for name, mod in list(sys.modules.items()):
    d = getattr(mod, '__dict__', None)
    if name in ('__main__', '__mp_main__') or d is main or not isinstance(d, dict): continue
    for k, v in list(d.items()):
        if isinstance(v, types.FunctionType) and getattr(v, '__module__', None) == '__main__':
            f.append('a module function replaced by notebook code (' + name + '.' + k + ')')
sys.stdout.write(TOKEN + json.dumps(sorted(set(f))[:8]) + '\n'); sys.stdout.flush()  # print may be the learner's
"""


def _probe_line(token: str) -> str:
    return (f"__import__('builtins').exec({_PROBE!r}, {{'TOKEN': {token + 'state'!r}}})"
            "  # grader: tamper report")


class SentinelInject(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        import secrets

        token = f"{_SENTINEL_PREFIX}{secrets.token_hex(16)}"
        resources["raylab_sentinel"] = token
        for cell in nb.cells:
            if cell.cell_type == "code" and utils.is_grade(cell):
                cell.source = _probe_line(token) + "\n" + cell.source + f"\nprint({token!r}, flush=True)"
        return nb, resources


class SentinelVerify(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        import json

        token = resources.get("raylab_sentinel")
        if not token:
            return nb, resources
        prefix, suffix = _probe_line(token) + "\n", f"\nprint({token!r}, flush=True)"
        state_token = token + "state"
        for cell in nb.cells:
            if not (cell.cell_type == "code" and utils.is_grade(cell)):
                continue
            if cell.source.startswith(prefix):
                cell.source = cell.source[len(prefix):]
            if cell.source.endswith(suffix):
                cell.source = cell.source[: -len(suffix)]
            seen, findings, outputs = False, [], []
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream" and token in out.get("text", ""):
                    kept = []
                    for line in out["text"].splitlines(keepends=True):
                        if line.startswith(state_token):
                            try:
                                findings += json.loads(line[len(state_token):])
                            except ValueError:
                                findings.append("an unreadable tamper report")
                        elif line.strip() == token:
                            seen = True
                        else:
                            kept.append(line.replace(token, ""))
                    out["text"] = "".join(kept)
                    if not out["text"]:
                        continue
                outputs.append(out)
            failed = any(o.get("output_type") == "error" for o in outputs)
            if findings:
                outputs.insert(0, nbformat.v4.new_output(
                    "stream", name="stdout", text=STATE_LINE + "; ".join(findings) + "\n"))
            if not seen and not failed:
                outputs.append(nbformat.v4.new_output(
                    "error", ename="TestCellTampered",
                    evalue="this test cell did not run to completion, yet no error was shown "
                           "(an exception was suppressed); it scores 0 and is flagged for review",
                    traceback=["TestCellTampered: the test cell did not run to completion"]))
            cell.outputs = outputs
        return nb, resources


class CapOutputBytes(NbGraderPreprocessor):
    """Cap each cell's outputs in bytes (nbgrader's LimitOutput counts lines: one 64 MiB line
    passed it and made a 67 MB feedback page). Text beyond the cap is cut with a note; a rich
    output (an image, HTML) that alone exceeds it is replaced by a note."""

    max_bytes = 200_000

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code":
            return cell, resources
        budget, outputs = self.max_bytes, []
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "stream":
                text = out.get("text", "")
                size = len(text.encode("utf-8", "replace"))
                if size > budget:
                    cut = text.encode("utf-8", "replace")[:max(budget, 0)].decode("utf-8", "ignore")
                    out["text"] = cut + f"\n[output cut: {size - len(cut.encode())} more bytes]\n"
                    size = len(cut.encode())
                budget -= size
            elif kind in ("display_data", "execute_result"):
                size = sum(len(str(v)) for v in out.get("data", {}).values())
                if size > max(budget, 0):
                    out["data"] = {"text/plain": f"[output of {size} bytes left out]"}
                    size = 0
                budget -= size
            elif kind == "error":
                out["evalue"] = out.get("evalue", "")[:4000]
                out["traceback"] = [line[:4000] for line in out.get("traceback", [])[:100]]
            outputs.append(out)
        cell.outputs = outputs
        return cell, resources
