#!/usr/bin/env python3
"""Tests of `tally report` (CTest runs them; docs/run_dir.md is the format).

    check_report.py cli TALLY_EXE WORK_DIR         the command: pages for every fixture case, escaping,
                                                   self-containment, errors (no browser needed)
    check_report.py chromium TALLY_EXE WORK_DIR    the pages in headless Chromium: every chart drawn
                                                   with what it should hold, its tooltip on hover, the
                                                   log-axis control, no script errors, a screenshot
                                                   that is not blank; the same for a comparison page
    check_report.py screenshot TALLY_EXE WORK_DIR OUT.png [RUN_DIR]
                                                   the page of RUN_DIR (a real run; default: the
                                                   synthetic one) as a PNG, to look at

Without Chromium the chromium test fails, unless TALLY_ALLOW_SKIP_CHROMIUM=1, when it exits 77 (skip).
Standard library only: the PNG is decoded with zlib and struct.
"""
import html.parser
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zlib
from collections import Counter

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_run_dir  # noqa: E402

CURVES = ("chart-loss", "chart-lr", "chart-grad-norm", "chart-throughput", "chart-mfu")
DETAIL = ("chart-modules-flops", "chart-modules-time", "chart-memory", "chart-roofline")
CHARTS = CURVES + DETAIL
# The inlined Chart.js starts with its licence banner; its own text is not the page's.
CHART_JS_BANNER = "/*!\n * Chart.js v3"
SKIP = 77
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def finish():
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("all checks passed")
    sys.exit(0)


def tally(exe, *args):
    return subprocess.run([exe, "report", *args], capture_output=True, text=True, timeout=120)


def write_report(exe, run_dir):
    p = tally(exe, run_dir)
    page = os.path.join(run_dir, "report.html")
    check(p.returncode == 0, f"tally report {run_dir}: exit {p.returncode}, stderr: {p.stderr.strip()}")
    check(p.stdout.strip() == page, f"tally report prints the page's path, got {p.stdout.strip()!r}")
    return page


def library_and_rest(text):
    """(the inlined Chart.js, the page without it): the library is checked apart, the page whole."""
    start = text.find(CHART_JS_BANNER)
    if not check(start > 0 and text.rfind("<script>", 0, start) == start - len("<script>"), "the page inlines Chart.js in a <script>"):
        return "", text
    end = text.index("</script>", start)
    return text[start:end], text[:start] + text[end:]


def check_self_contained(case, text):
    library, rest = library_and_rest(text)
    check(len(library) > 100_000, f"{case}: Chart.js is inlined whole ({len(library)} characters)")
    check("<script" not in library.lower() and "<!--" not in library, f"{case}: the inlined library cannot end its <script> early")
    # Nothing fetched: no tags that load, no src/href, no URL but in the library's licence banner.
    check(not re.search(r"<(?:link|img|iframe|object|embed)\b", rest), f"{case}: no <link>/<img>/<iframe> tags")
    tags = re.findall(r"<[a-zA-Z][^>]*>", rest)  # escaped text holds no '<'
    check(not any(re.search(r"\s(?:src|href)\s*=", t) for t in tags), f"{case}: no src= or href= attributes")
    urls = set(re.findall(r"https?://[^\s\"'<>)]*", rest))
    check(not urls, f"{case}: no URLs outside the library's licence banner, got {sorted(urls)}")
    check(text.count("<script") == 4 and text.count("</script>") == 4,
          f"{case}: exactly the page's 4 scripts (data blob escaped), got {text.count('<script')} / {text.count('</script>')}")


def check_compare_cli(exe, work, runs):
    """`tally report A B`: compare.html in the working directory, the runs' totals, the settings that differ."""
    cwd = os.path.join(work, "compare")
    os.makedirs(cwd, exist_ok=True)
    page = os.path.join(cwd, "compare.html")
    if os.path.exists(page):
        os.remove(page)
    a, b = make_run_dir.write_case(runs, "full"), make_run_dir.write_case(runs, "other")
    p = subprocess.run([exe, "report", a, b], capture_output=True, text=True, timeout=120, cwd=cwd)
    check(p.returncode == 0 and p.stdout.strip() == "compare.html", f"tally report A B prints compare.html: {p.returncode} {p.stdout!r} {p.stderr!r}")
    if not check(os.path.isfile(page), "tally report A B writes compare.html in the working directory"):
        return
    text = open(page, encoding="utf-8").read()
    check_self_contained("compare", text)
    check("<title>tally report: full vs other</title>" in text, "compare: the title names both runs")
    for cid in CURVES:
        check(f'<canvas id="{cid}"' in text, f"compare: has <canvas id={cid}>")
    for cid in DETAIL:
        check(f'id="{cid}"' not in text, f"compare: no per-run detail chart {cid}")
    table = text[text.index('<section id="comparison">'):text.index("</section>", text.index('<section id="comparison">'))]
    check(table.count("<tr>") >= 3 and "<code>full</code>" in table and "<code>other</code>" in table, "compare: a row per run")
    differ = table[table.index("Settings that differ"):]
    for key in ("optimizer.lr", "model.d_model"):
        check(f"<code>{key}</code>" in differ, f"compare: {key} listed as differing")
    check("batch_size" not in differ.split("other settings")[0], "compare: a setting both runs share is not listed")
    check("1.521" in table, "compare: the validation losses are in the table")
    # A RUN_DIR that is not there: an error naming it, and no page.
    os.remove(page)
    missing = os.path.join(work, "no-such-run")
    p = subprocess.run([exe, "report", a, missing], capture_output=True, text=True, timeout=120, cwd=cwd)
    check(p.returncode != 0 and missing in p.stderr and not os.path.exists(page), f"compare: a missing RUN_DIR is named, nothing written: {p.stderr!r}")
    # A compare.html tally did not write is not written over.
    with open(page, "w") as f:
        f.write("my notes")
    p = subprocess.run([exe, "report", a, b], capture_output=True, text=True, timeout=120, cwd=cwd)
    check(p.returncode != 0 and "--out" in p.stderr and open(page).read() == "my notes", f"compare: a foreign compare.html is kept: {p.stderr!r}")
    os.remove(page)


# ---------------------------------------------------------------- the command, no browser
def check_cli(exe, work):
    runs = os.path.join(work, "runs")
    for case in make_run_dir.CASES:
        d = make_run_dir.write_case(runs, case)
        page = write_report(exe, d)
        if not check(os.path.isfile(page), f"{case}: {page} written"):
            continue
        text = open(page, encoding="utf-8").read()
        check(text.startswith("<!DOCTYPE html>"), f"{case}: an HTML5 document")
        for cid in CHARTS:
            check(f'<canvas id="{cid}"' in text, f"{case}: has <canvas id={cid}>")
        check_self_contained(case, text)
        if case == "full":
            for unit in ("GFLOP", "MiB", " ms", "FLOP/s", "nats/token", "AMD EPYC 9R45"):
                check(unit in text, f"full: shows {unit!r}")
        if case == "killed":
            check("no summary.json" in text and "cut short" in text, "killed: says summary.json is missing and the last line was cut")
        if case == "empty":
            check("metrics.jsonl is empty" in text, "empty: says metrics.jsonl is empty")
        if case == "summary-only":
            check("no metrics.jsonl" in text and "model.d_model" in text, "summary-only: says so; config from summary.json")
        if case == "hostile":
            check('id="pwned' not in text, "hostile: no injected element")
            check("&lt;/script&gt;&lt;img id=&quot;pwned-op&quot;" in text, "hostile: op name shown as text")
            check("&lt;b id=&quot;pwned-cpu&quot;&gt;" in text, "hostile: cpu name shown as text")

    check_compare_cli(exe, work, runs)

    # --out
    out = os.path.join(work, "elsewhere.html")
    p = tally(exe, os.path.join(runs, "full"), "--out", out)
    check(p.returncode == 0 and p.stdout.strip() == out and os.path.isfile(out), f"--out writes {out} and prints it")

    # Errors: one line naming the file, non-zero exit.
    def expect_error(args, needle, what):
        p = tally(exe, *args)
        lines = p.stderr.strip().splitlines()
        check(p.returncode != 0, f"{what}: non-zero exit")
        check(len(lines) == 1 and needle in lines[0] and "tally: error:" in lines[0],
              f"{what}: one line naming {needle!r}, got {p.stderr.strip()!r}")

    missing = os.path.join(work, "no-such-run")
    expect_error([missing], missing, "missing RUN_DIR")
    empty_dir = os.path.join(work, "not-a-run")
    os.makedirs(empty_dir, exist_ok=True)
    expect_error([empty_dir], "not a run directory", "a directory with none of the files")
    bad = make_run_dir.write_case(os.path.join(work, "bad"), "full")
    with open(os.path.join(bad, "summary.json"), "w") as f:
        f.write('{"run": {"steps": 3,,}}')
    expect_error([bad], os.path.join(bad, "summary.json"), "unparseable summary.json")
    with open(os.path.join(bad, "summary.json"), "w") as f:
        f.write("[1, 2]")
    expect_error([bad], "expected a JSON object", "summary.json not an object")
    os.remove(os.path.join(bad, "summary.json"))
    lines = open(os.path.join(bad, "metrics.jsonl")).read().splitlines()
    lines[2] = lines[2][:25]
    with open(os.path.join(bad, "metrics.jsonl"), "w") as f:
        f.write("\n".join(lines) + "\n")
    expect_error([bad], "metrics.jsonl:3", "a broken line inside metrics.jsonl")
    finish()


# ---------------------------------------------------------------- the page in Chromium
def find_chromium():
    for name in (os.environ.get("TALLY_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def run_chromium(chromium, args, timeout=120):
    """Runs headless Chromium with a fresh profile; returns (stdout, stderr). Never hangs."""
    with tempfile.TemporaryDirectory(prefix="tally-chromium-") as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
               "--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", *args]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise SystemExit(f"FAIL: chromium did not finish in {timeout} s: {' '.join(cmd)}")
        if p.returncode != 0:
            raise SystemExit(f"FAIL: chromium exited {p.returncode}: {err.decode(errors='replace')[-2000:]}")
        return out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace")


class Dom(html.parser.HTMLParser):
    """What the tests need from a dumped DOM: the ids, the figure captions, the error box, and the
    chart script's record of what it drew (#report-status, JSON)."""

    def __init__(self):
        super().__init__()
        self.ids, self.captions = set(), []
        self.status, self.status_text = None, ""
        self.errors_hidden, self.errors_text = None, ""
        self.inside = None  # "errors", "status" or "caption"

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if a.get("id") == "js-errors":
            self.errors_hidden, self.inside = "hidden" in a, "errors"
        elif a.get("id") == "report-status":
            self.status, self.inside = a.get("data-status"), "status"
        elif tag == "figcaption":
            self.inside = "caption"
            self.captions.append("")

    def handle_endtag(self, tag):
        if tag in ("div", "figcaption"):
            self.inside = None

    def handle_data(self, data):
        if self.inside == "errors":
            self.errors_text += data
        elif self.inside == "status":
            self.status_text += data
        elif self.inside == "caption":
            self.captions[-1] += data

    def drawn(self):
        try:
            return json.loads(self.status_text)
        except ValueError:
            return {}


def png_pixels(path):
    """(width, height, rows of pixels as bytes, bytes per pixel) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"FAIL: {path} is not a PNG")
    pos, idat = 8, []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise SystemExit(f"FAIL: {path}: expected an 8-bit RGB(A) non-interlaced PNG, got depth {depth} type {ctype}")
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(b"".join(idat)), w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def check_screenshot(png, min_colors=16, min_ink=0.03):
    w, h, rows, bpp = png_pixels(png)
    colors, ink = set(), 0
    for row in rows[::2]:  # every other row is plenty
        for i in range(0, len(row), bpp * 2):
            px = row[i:i + 3]
            colors.add(px)
            ink += px != b"\xff\xff\xff"
    sampled = ((h + 1) // 2) * ((w + 1) // 2)
    print(f"screenshot {w}x{h}: {len(colors)} distinct colors, {100 * ink / sampled:.1f}% not white")
    check(len(colors) >= min_colors, f"screenshot has at least {min_colors} colors (got {len(colors)})")
    check(ink / sampled >= min_ink, f"screenshot is at least {100 * min_ink:.0f}% not white")


def console_errors(stderr):
    # With --enable-logging=stderr, page console messages (uncaught errors, CSP refusals) are
    # logged as "...:CONSOLE..." lines; the page itself writes none.
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def load_in_chromium(chromium, case, page):
    """Opens `page` with #selftest (charts.js hovers each chart and flips the log-axis control);
    checks the script finished cleanly and returns what it recorded drawing."""
    dom_text, stderr = run_chromium(chromium, ["--dump-dom", "file://" + os.path.abspath(page) + "#selftest"])
    dom = Dom()
    dom.feed(dom_text)
    check(dom.status == "ok", f"{case}: the chart script finished without errors (status {dom.status!r})")
    check(dom.errors_hidden and not dom.errors_text.strip(), f"{case}: no script errors on the page: {dom.errors_text.strip()!r}")
    check(not console_errors(stderr), f"{case}: no console messages (CSP refusals among them): {console_errors(stderr)[:3]}")
    check(not any(i.startswith("pwned") for i in dom.ids), f"{case}: no injected elements")
    return dom.drawn()


def check_chart(case, cid, chart, has_data):
    """A chart drew data with a tooltip on hover, or says in its figure why it has none."""
    if not has_data:
        check(chart.get("empty") and chart.get("note"), f"{case}: {cid} says its data is missing: {chart}")
        return
    sets = chart.get("datasets", [])
    check(not chart.get("empty") and sets and all(d["points"] > 0 for d in sets), f"{case}: {cid} draws data: {sets}")
    hover = chart.get("hover") or []
    check(len(hover) >= 2 and all(hover), f"{case}: {cid} shows a title and values on hover: {hover}")


def check_chromium(exe, work):
    chromium = find_chromium()
    if not chromium:
        msg = ("chromium is not installed: the report test needs headless Chromium "
               "(Debian: apt-get install chromium; scripts/test.sh installs it)")
        if os.environ.get("TALLY_ALLOW_SKIP_CHROMIUM") == "1":
            print("SKIP:", msg)
            sys.exit(SKIP)
        print("FAIL:", msg, "(set TALLY_ALLOW_SKIP_CHROMIUM=1 to skip locally)")
        sys.exit(1)
    runs = os.path.join(work, "runs")
    for case in make_run_dir.CASES:
        page = write_report(exe, make_run_dir.write_case(runs, case))
        drawn = load_in_chromium(chromium, case, page)
        check(len(drawn) == len(CHARTS), f"{case}: every chart recorded ({sorted(drawn)})")
        has_metrics = case not in ("empty", "summary-only")
        has_summary = case not in ("killed", "empty")
        for cid in CHARTS:
            want = has_metrics if cid in CURVES else has_summary
            check_chart(case, cid, drawn.get(cid, {}), want)
        if has_metrics:
            steps = 137 if case == "killed" else make_run_dir.STEPS
            for cid in CURVES:
                sets = [d for d in drawn.get(cid, {}).get("datasets", []) if not d["label"].endswith("(raw)")]
                check(sets and sets[0]["points"] == steps, f"{case}: {cid} plots every step ({steps}): {sets[:1]}")
            check(drawn["chart-lr"].get("y_scale") == "logarithmic" and drawn["chart-throughput"].get("y_scale") == "linear",
                  f"{case}: the log-axis control puts loss, lr and gradient norm on a log axis, not throughput")
            check(any("(raw)" in d["label"] for d in drawn["chart-loss"]["datasets"]), f"{case}: smoothed by default, the raw curve behind")
        if case == "full":
            labels = [d["label"] for d in drawn["chart-loss"]["datasets"]]
            check("validation loss" in labels and any(l.startswith("unigram entropy") for l in labels),
                  f"full: the loss chart has the validation loss and the unigram entropy: {labels}")
            val = next(d for d in drawn["chart-loss"]["datasets"] if d["label"] == "validation loss")
            check(val["points"] == make_run_dir.STEPS // make_run_dir.VAL_EVERY, f"full: every validation loss plotted: {val}")
            check(drawn["chart-loss"]["hover"] == ["step 300", "loss: 1.44"], f"full: hovering the loss's last point: {drawn['chart-loss']['hover']}")
            check(len(drawn["chart-modules-flops"]["labels"]) == 7, "full: the modules chart has a bar per module")
            check(sum(d["points"] for d in drawn["chart-memory"]["datasets"]) >= 400, "full: the memory chart stacks 4+ categories of 100 ops")
            roof = drawn["chart-roofline"]["datasets"]
            check("GFLOP/s" in roof[0]["label"], f"full: the roofline names its peak in FLOP/s: {roof[0]['label']}")
            check(sum(d["points"] for d in roof[2:]) >= 15, "full: the roofline places 15+ ops")
            check("memory-bound" in " ".join(drawn["chart-roofline"]["hover"]), f"full: an op's tooltip says its bound: {drawn['chart-roofline']['hover']}")
        if case == "resumed":
            check(drawn["chart-loss"].get("vlines") == ["resumed"], f"resumed: the loss chart marks the resumption: {drawn['chart-loss'].get('vlines')}")
        if case == "hostile":
            check(any('alert("x")' in l for l in drawn["chart-modules-flops"]["labels"]), "hostile: the odd module name is drawn as text")

    # The comparison page: every curve has one line per run.
    cwd = os.path.join(work, "compare")
    os.makedirs(cwd, exist_ok=True)
    out = os.path.join(cwd, "compare.html")
    p = subprocess.run([exe, "report", make_run_dir.write_case(runs, "full"), make_run_dir.write_case(runs, "other"), "--out", out],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"tally report full other --out: {p.stderr!r}")
    drawn = load_in_chromium(chromium, "compare", out)
    check(sorted(drawn) == sorted(CURVES), f"compare: the curves and no detail chart ({sorted(drawn)})")
    for cid in CURVES:
        chart = drawn.get(cid, {})
        check_chart("compare", cid, chart, True)
        labels = [d["label"] for d in chart.get("datasets", [])]
        check("full" in labels and "other" in labels, f"compare: {cid} has a line per run: {labels}")
    check({"full validation loss", "other validation loss"} <= {d["label"] for d in drawn["chart-loss"]["datasets"]},
          "compare: each run's validation loss")

    for name, page in (("full", write_report(exe, os.path.join(runs, "full"))), ("compare", out)):
        png = os.path.join(work, name + ".png")
        run_chromium(chromium, ["--hide-scrollbars", "--window-size=1000,1400", f"--screenshot={png}", "file://" + os.path.abspath(page)])
        if check(os.path.isfile(png), f"{name}: a screenshot was written"):
            check_screenshot(png)
    finish()


def recompress_png(path, colors=256):
    """Rewrites a screenshot smaller for the docs: an 8-bit palette of its `colors` commonest colors,
    every other color mapped to the nearest of them (only anti-aliased edges change), zlib level 9."""
    w, h, rows, bpp = png_pixels(path)
    pixels = [[row[i:i + 3] for i in range(0, len(row), bpp)] for row in rows]
    palette = [c for c, _ in Counter(px for row in pixels for px in row).most_common(colors)]
    index = {c: i for i, c in enumerate(palette)}

    def nearest(c):
        return min(range(len(palette)), key=lambda i: sum((a - b) ** 2 for a, b in zip(c, palette[i])))

    raw = bytearray()
    for row in pixels:
        raw.append(0)
        for px in row:
            if px not in index:
                index[px] = nearest(px)
            raw.append(index[px])

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0)) +
                chunk(b"PLTE", b"".join(palette)) + chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b""))


def make_screenshot(exe, work, out, run_dir=None):
    chromium = find_chromium()
    if not chromium:
        raise SystemExit("chromium is not installed")
    page = write_report(exe, run_dir or make_run_dir.write_case(os.path.join(work, "runs"), "full"))
    run_chromium(chromium, ["--hide-scrollbars", "--window-size=1200,2360", f"--screenshot={os.path.abspath(out)}",
                            "file://" + os.path.abspath(page)])
    check_screenshot(out)
    recompress_png(out)
    print(out, os.path.getsize(out), "bytes")


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("cli", "chromium", "screenshot"):
        raise SystemExit(__doc__)
    mode, exe, work = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    os.makedirs(work, exist_ok=True)
    if mode == "cli":
        check_cli(exe, work)
    elif mode == "chromium":
        check_chromium(exe, work)
    else:
        make_screenshot(exe, work, sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None)
