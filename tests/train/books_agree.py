"""Every printed number means one thing: the summary `tally train` prints, its summary.json and its
report.html give the same MFU and HFU, the same memory by category (in a training step's order, each
category's own peak, then the simultaneous peak) and the same clock for the promised peak.

usage: books_agree.py TALLY WORK_DIR"""

import json
import os
import re

from train_cli import TINY, Checks, run, script_args

tally, work = script_args()
check = Checks()



out = os.path.join(work, "run")
r = run(tally, ["train", "--out", out, "--steps", "4"] + TINY)
assert r.returncode == 0, r.stderr
s = json.load(open(os.path.join(out, "summary.json")))
page = open(os.path.join(out, "report.html")).read()
cells = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>", page)


def pct(v):
    return "%.1f%%" % (100 * v)


for kind in ("mfu", "hfu"):
    line = next((l for l in r.stdout.splitlines() if l.startswith(kind.upper() + " ")), "")
    promised, measured = pct(s[kind]["promised"]), pct(s[kind]["measured"])
    check(line.split()[1:2] == [promised] and (measured + " of the measured") in line,
          "%s: the CLI's line %r gives summary.json's %s and %s" % (kind, line, promised, measured))
    rows = [c for c in cells if c[0].startswith(kind.upper() + " (")]
    check(len(rows) == 2 and rows[0][2] == promised and rows[1][2] == measured,
          "%s: the report's rows %r give the same %s and %s" % (kind, rows, promised, measured))
check(s["hfu"]["promised"] > s["mfu"]["promised"], "HFU counts more FLOPs than MFU")

# The memory table: the CLI's rows and the report's, in the categories' order, the same text.
order = ["parameters", "working_copies", "gradients", "optimizer_state", "activations", "kv_cache", "other"]
lines = r.stdout.splitlines()
table = lines[next(i for i, l in enumerate(lines) if l.startswith("memory ")):]
cli_rows = [l.split() for l in table if l.split() and l.split()[0] in order]
cli_names = [row[0] for row in cli_rows if row[0] in order]
check(cli_names == [c for c in order if c in s["memory"]["predicted"]], "the CLI's memory rows in a step's order: %r" % cli_names)
report_names = [c[0] for c in cells if c[0] in order]
check(report_names == cli_names, "the report's memory rows in the same order: %r" % report_names)
for row in cli_rows:
    if row[0] not in order:
        continue
    cli_pred, cli_tracked = " ".join(row[1:3]), " ".join(row[3:5])
    rep = next(c for c in cells if c[0] == row[0])
    check((rep[1], rep[2]) == (cli_pred, cli_tracked), "%s: CLI %s / %s, report %s / %s" % (row[0], cli_pred, cli_tracked, rep[1], rep[2]))
peak_line = next((l for l in r.stdout.splitlines() if "all at once" in l), "")
peak_row = next((c for c in cells if c[0].startswith("<b>all at once</b>")), None)
check(peak_row is not None and " ".join(peak_line.split()[3:5]) == peak_row[1] and " ".join(peak_line.split()[5:7]) == peak_row[2],
      "the simultaneous peak: CLI %r, report %r" % (peak_line, peak_row))
check("the categories' own peaks add up to" in peak_line, "the simultaneous peak is labelled as such")
o = s["memory"]["other"]
check(o["highest_between_ops"] == o["before_the_step"] + o["change_in_forward"] + o["change_in_backward"] + o["change_in_optimizer"],
      "other's highest point is split exactly: %r" % o)
other_line = next((l for l in r.stdout.splitlines() if "its highest between ops" in l), "")
other_row = next((c for c in cells if "other at its highest between ops" in c[0]), None)
check(other_row is not None and other_line.split("its highest between ops, ")[1].split(" = ")[0] == other_row[2]
      and other_line.split(" = ")[1].split(" live before")[0] in other_row[0],
      "what holds other: CLI %r, report %r" % (other_line, other_row))
rss = next((l for l in r.stdout.splitlines() if l.startswith("process RSS")), "")
check("anonymous" in rss and "of files" in rss and s["memory"]["process_at_end"]["rss"] > 0, "RSS is accounted: %r" % rss)

# The clock of the promised peak: named in the CLI, kept in summary.json.
peak = next((l for l in r.stdout.splitlines() if l.startswith("peak ")), "")
check(("%.2f GHz, %s" % (s["machine"]["clock_ghz"], s["machine"]["clock_source"])) in peak,
      "the promised peak's clock and its source: %r against %r" % (peak, s["machine"]))

check.finish("the summary, summary.json and the report agree")
