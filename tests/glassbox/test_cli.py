"""The `glassbox` command as a shell user meets it: a reader that leaves early (`glassbox diagnose RUN | head`)
ends the command quietly, with the status a shell gives a program stopped by SIGPIPE, and no traceback."""
import json
import subprocess
import sys
from pathlib import Path


def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"step": i, "loss": 5 - i * 0.01}) + "\n" for i in range(1, 200)))
    exe = Path(sys.executable).with_name("glassbox")
    proc = subprocess.Popen([str(exe), "diagnose", str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err[-2000:]
    assert "Traceback" not in err and "BrokenPipeError" not in err, err[-2000:]
