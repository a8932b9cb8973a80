"""An alert's words where other users' text is in them: Slack's markup is escaped, the JSON is JSON, and the alert
command gets the message on stdin alone, never in its arguments or environment."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from gputui.alerts.delivery import Command, Webhook
from gputui.alerts.message import slack_escape, slack_text
from tests.alerts.receiver import receiving

# A process and a function name as another user may choose them: Slack's broadcast, a disguised link, an entity.
TITLE = "GPU 0 starved by <!channel> in <https://evil.example|train.py> &amp; <@U123>"
MESSAGE = {"host": "gpu<01>", "rule": "cpu_contention", "state": "open", "severity": "warning", "gpus": [0]}
MESSAGE |= {"title": TITLE}


def test_slack_text_escapes_what_slack_would_read_as_markup() -> None:
    text = slack_text(MESSAGE)
    assert text == (
        "[gpu&lt;01&gt;] OPEN warning cpu_contention (GPU 0): GPU 0 starved by &lt;!channel&gt; in "
        "&lt;https://evil.example|train.py&gt; &amp;amp; &lt;@U123&gt;"
    )
    assert "<" not in text and ">" not in text
    assert slack_escape("a & b") == "a &amp; b"


def test_slack_text_writes_a_gpu_list_as_the_verdict_and_the_fleet_view_do() -> None:
    """One vocabulary (issue 38): "GPUs 0-3" everywhere, where Slack's line said "GPU 0,1,2,3"."""
    text = slack_text(MESSAGE | {"gpus": [0, 1, 2, 3, 6], "title": "t"})
    assert "warning cpu_contention (GPUs 0-3,6): t" in text


def test_slack_gets_the_escaped_line_and_a_webhook_the_message_as_json() -> None:
    with receiving() as receiver:
        Webhook(receiver.url, slack=True, timeout_s=5).send(MESSAGE)
        Webhook(receiver.url, slack=False, timeout_s=5).send(MESSAGE)
    (_, slack), (_, plain) = receiver.posts
    assert "<!channel>" not in slack["text"] and "&lt;!channel&gt;" in slack["text"]
    assert plain == MESSAGE  # JSON escapes what it must itself: the receiver reads back what was sent


def test_the_alert_command_gets_foreign_text_on_stdin_only(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    script = (
        "import json, os, sys; "
        f"json.dump({{'argv': sys.argv, 'env': dict(os.environ), 'stdin': sys.stdin.read()}}, open({str(out)!r}, 'w'))"
    )
    Command(shlex.join([sys.executable, "-c", script]), shell=False, timeout_s=20).send(MESSAGE)
    seen = json.loads(out.read_text())
    assert json.loads(seen["stdin"]) == MESSAGE
    outside = json.dumps([seen["argv"], seen["env"]])
    assert "channel" not in outside and "evil.example" not in outside and "gpu<01>" not in outside
