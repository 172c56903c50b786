"""The benchmark's record of which code ran (bench/run.py, `git_tree`; report.py): git's tree id of the
package, computed without git, so that a results.json names its commit however the GPU
machine's copy of the repository got there."""

import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import run  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git to compare with")


def _git(cwd, *args) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_git_tree_is_gits_id_of_the_py_files(tmp_path):
    # names whose order differs between plain sorting and git's (a folder sorts as "name/")
    files = {"a.py": "x = 1\n", "sub-x.py": "y = 2\n", "sub/b.py": "", "sub/deeper/c.py": "z = 'é'\n",
             "sub0.py": "w = 3\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    # what git does not track here: bytecode caches, a folder without .py files
    (tmp_path / "sub" / "__pycache__").mkdir()
    (tmp_path / "sub" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"\0\1")
    (tmp_path / "empty").mkdir()
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", *files)
    assert run.git_tree(str(tmp_path)) == _git(tmp_path, "write-tree")


def test_git_tree_of_the_package_names_this_checkouts_commit():
    root = os.path.join(os.path.dirname(__file__), os.pardir)
    if _git(root, "status", "--porcelain", "--", "multisoftmax"):
        pytest.skip("multisoftmax/ has changes not committed: no commit to compare with")
    assert run.git_tree(os.path.join(root, "multisoftmax")) == _git(root, "rev-parse", "HEAD:multisoftmax")


def test_git_tree_of_a_folder_without_py_files_is_none(tmp_path):
    (tmp_path / "notes.txt").write_text("no code\n")
    assert run.git_tree(str(tmp_path)) is None


def test_report_names_the_package_of_each_merged_run():
    import copy
    import json

    import report

    path = os.path.join(os.path.dirname(__file__), os.pardir, "bench", "results", "h100", "run_f4c822d",
                        "log_softmax", "results.json")
    with open(path) as f:
        run_a = json.load(f)
    tree = run_a["meta"]["source"]["multisoftmax_tree"]
    run_b = copy.deepcopy(run_a)
    md = report.markdown(report.merge([run_a, run_b]))
    assert "runs of one package" in md and md.count(f"package tree `{tree[:12]}`") == 2
    run_b["meta"]["source"]["multisoftmax_tree"] = "0" * 40  # another package: a rerun after a change
    md = report.markdown(report.merge([run_a, run_b]))
    assert "runs of one package" not in md and "re-measures the shapes that a change" in md
    assert f"package tree `{tree[:12]}`" in md and "package tree `000000000000`" in md


def test_report_says_how_the_run_timed_torch_impls():
    """results.md's timing sentence follows the records: graphs at every size before 9105ad6,
    the stream for calls moving >= 256 MiB since."""
    import json

    import report

    h100 = os.path.join(os.path.dirname(__file__), os.pardir, "bench", "results", "h100")
    with open(os.path.join(h100, "run_f4c822d", "log_softmax", "results.json")) as f:
        before = json.load(f)
    with open(os.path.join(h100, "run_9105ad6", "log_softmax", "results.json")) as f:
        after = json.load(f)
    assert report.torch_timing(before).startswith("a CUDA graph of k calls")
    assert report.torch_timing(after).startswith("calls moving >= 256 MiB: 5 back to back on the stream")
    assert report.torch_timing(after) in report.markdown(after)
