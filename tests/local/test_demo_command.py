"""`edufair demo --print-command` prints exactly what the demo runs; configs/demo-local.yaml is the
same metadata; the tutor's decoding can be set; the child's stderr reaches the terminal without
git's "not a git repository" noise."""

from __future__ import annotations

import io
import os
import shlex
import threading

import pytest
import yaml

from edufair_metrics.cli import main
from edufair_metrics.errors import EduFairError
from edufair_metrics.local.demo import (
    PLACEHOLDER_URL,
    DemoOptions,
    demo_metadata,
    levels_per_question,
    lm_eval_command,
)
from edufair_metrics.protocol import drawn_levels
from edufair_metrics.settings import resolve_runner_settings
from edufair_metrics.local.server import EMBEDDED_ALIAS, StderrRelay

from tests.helpers.paths import REPO


def test_print_command_is_the_command_the_demo_runs(capsys):
    assert main(["demo", "--print-command", "--levels", "female,male", "--gen-kwargs", "temperature=0.7,top_p=0.9"]) == 0
    out = capsys.readouterr().out
    cmd_line = next(line for line in out.splitlines() if line.startswith("lm_eval run "))
    opts = DemoOptions(levels=("female", "male"), gen_kwargs="temperature=0.7,top_p=0.9")
    expected = lm_eval_command(opts, REPO / "x", PLACEHOLDER_URL, EMBEDDED_ALIAS, 2)[3:]
    got = shlex.split(cmd_line)[1:]
    assert got[: got.index("--output_path")] == expected[: expected.index("--output_path")]
    assert got[got.index("--gen_kwargs") + 1] == "temperature=0.7,max_gen_toks=64,top_p=0.9"
    meta = yaml.safe_load(out.split("config\": FILE}}'):\n", 1)[1])
    assert meta == demo_metadata(opts, PLACEHOLDER_URL, EMBEDDED_ALIAS)
    assert meta["judge"]["reasoning_effort"] is None  # the embedded model has no reasoning mode


@pytest.mark.parametrize("flag, sent", [(None, None), ("none", None), ("low", "low"), ("high", "high")])
def test_an_own_endpoints_block_states_the_reasoning_effort_it_sends(tmp_path, capsys, flag, sent):
    # The block saved from --print-command is what a user runs with; an absent key would resolve to
    # the paper's "low" and record that for a model that has no reasoning mode.
    argv = ["demo", "--print-command", "--endpoint", "http://10.0.0.5:8000/v1", "--endpoint-model", "my-model"]
    assert main(argv + (["--reasoning-effort", flag] if flag else [])) == 0
    text = capsys.readouterr().out
    block = text.split("config\": FILE}}'):\n", 1)[1]
    meta = yaml.safe_load(block)
    assert "reasoning_effort" in meta["judge"] and meta["judge"]["reasoning_effort"] == sent
    assert meta["judge"]["base_url"] == "http://10.0.0.5:8000/v1"
    assert "model=my-model,base_url=http://10.0.0.5:8000/v1/chat/completions" in text
    saved = tmp_path / "my-settings.yaml"
    saved.write_text(block)
    settings = resolve_runner_settings({}, {"edufair": {"config": str(saved)}}, environ={})
    assert settings.judge.reasoning_effort == sent


def test_configs_demo_local_is_the_demos_metadata():
    shipped = yaml.safe_load((REPO / "configs" / "demo-local.yaml").read_text())
    assert shipped == demo_metadata(DemoOptions(), PLACEHOLDER_URL, EMBEDDED_ALIAS)


@pytest.mark.parametrize("argv, message", [
    (["--task", "edufair_explicit_phsics"], "did you mean 'edufair_explicit_physics'?"),
    (["--gen-kwargs", "temperature"], "--gen-kwargs expects key=value pairs"),
])
def test_bad_demo_options_are_one_line(capsys, argv, message):
    assert main(["demo", "--print-command", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_the_demo_runs_the_extension_tasks_with_their_own_levels():
    assert levels_per_question(DemoOptions(task="edufair_explicit_physics")) == 9
    assert levels_per_question(DemoOptions(task="edufair_intersectional_physics")) == 8
    draw, drawn = drawn_levels()  # the protocol's default draw: k names in each of the 8 cells
    assert levels_per_question(DemoOptions(task="edufair_implicit_names_math")) == 8 * draw.k == len(drawn)
    assert levels_per_question(DemoOptions(task="edufair_implicit_names_math", levels=tuple(drawn[:2]))) == 2
    with pytest.raises(EduFairError, match="not among the names drawn"):
        levels_per_question(DemoOptions(task="edufair_implicit_names_math", levels=("no_such_name",)))
    with pytest.raises(EduFairError, match="did you mean 'edufair_intersectional_physics'"):
        levels_per_question(DemoOptions(task="edufair_intersectional_phyics"))


def test_stderr_relay_drops_only_gits_noise():
    noisy = (b"2026 INFO starting\n"
             b"fatal: not a git repository (or any of the parent directories): .git\n"
             b"judge:  10%|#  | 1/10\rjudge:  20%|## | 2/10\r"
             b"fatal: not a git repository (or any of the parent directories): .git\n"
             b"warning: fatal things happen\ndone\n")
    want = noisy.replace(b"fatal: not a git repository (or any of the parent directories): .git\n", b"")
    for chunk in (1, 3, 7, 64, 4096):
        r, w = os.pipe()
        sink = io.BytesIO()
        sink.flush = lambda: None
        relay = StderrRelay(os.fdopen(r, "rb"), sink).start()

        def feed(w=w, chunk=chunk):
            for i in range(0, len(noisy), chunk):
                os.write(w, noisy[i:i + chunk])
            os.close(w)

        t = threading.Thread(target=feed)
        t.start()
        t.join()
        relay.join()
        assert sink.getvalue() == want, chunk
