#!/usr/bin/env python3
"""Tests of `tally report` (CTest runs them; docs/run_dir.md is the format).

    check_report.py cli TALLY_EXE WORK_DIR         the command: pages for every fixture case, escaping,
                                                   self-containment, errors (no browser needed)
    check_report.py chromium TALLY_EXE WORK_DIR    the pages in headless Chromium: every chart drawn,
                                                   no script errors, a screenshot that is not blank
    check_report.py screenshot TALLY_EXE WORK_DIR OUT.png [RUN_DIR]
                                                   the page of RUN_DIR (a real run; default: the
                                                   synthetic one) as a PNG, to look at

Without Chromium the chromium test fails, unless TALLY_ALLOW_SKIP_CHROMIUM=1, when it exits 77 (skip).
Standard library only: the PNG is decoded with zlib and struct.
"""
import html.parser
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

CHARTS = ("chart-loss", "chart-throughput", "chart-modules", "chart-memory", "chart-roofline")
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
            check(f'<svg id="{cid}"' in text, f"{case}: has <svg id={cid}>")
        # Self-contained: nothing fetched, no URL but the SVG namespace.
        check(not re.search(r"<(?:link|img|iframe|object|embed)\b", text), f"{case}: no <link>/<img>/<iframe> tags")
        tags = re.findall(r"<[a-zA-Z][^>]*>", text)  # escaped text holds no '<'
        check(not any(re.search(r"\s(?:src|href)\s*=", t) for t in tags), f"{case}: no src= or href= attributes")
        urls = set(re.findall(r"https?://[^\s\"'<>)]*", text))
        check(urls <= {"http://www.w3.org/2000/svg"}, f"{case}: no URLs but the SVG namespace, got {sorted(urls)}")
        check(text.count("<script") == 3 and text.count("</script>") == 3,
              f"{case}: exactly the page's 3 scripts (data blob escaped), got {text.count('<script')} / {text.count('</script>')}")
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
    """What the tests need from a dumped DOM: per chart, a count of tags and classes drawn inside it."""

    def __init__(self):
        super().__init__()
        self.ids, self.charts, self.chart_text = set(), {}, {}
        self.chart = None
        self.status = self.status_text = None
        self.errors_hidden, self.errors_text, self.in_errors, self.in_status = None, "", False, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "svg" and a.get("id") in CHARTS:
            self.chart = a["id"]
            self.charts[self.chart], self.chart_text[self.chart] = Counter(), ""
        elif self.chart:
            c = self.charts[self.chart]
            c[tag] += 1
            for cls in (a.get("class") or "").split():
                c["." + cls] += 1
        if a.get("id") == "js-errors":
            self.errors_hidden, self.in_errors = "hidden" in a, True
        if a.get("id") == "report-status":
            self.status, self.in_status, self.status_text = a.get("data-status"), True, ""

    def handle_endtag(self, tag):
        if tag == "svg":
            self.chart = None
        if tag == "div":
            self.in_errors = self.in_status = False

    def handle_data(self, data):
        if self.chart:
            self.chart_text[self.chart] += data
        if self.in_errors:
            self.errors_text += data
        if self.in_status:
            self.status_text += data


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
    # What each case must draw: chart id -> the class of its data marks and how many, or None for
    # a chart that must say its data is missing.
    full = {"chart-loss": (".series", 1), "chart-throughput": (".series", 2), "chart-modules": (".bar", 20),
            "chart-memory": (".area", 4), "chart-roofline": (".point", 15)}
    no_summary = {"chart-loss": (".series", 1), "chart-throughput": (".series", 2),
                  "chart-modules": None, "chart-memory": None, "chart-roofline": None}
    no_metrics = dict(full, **{"chart-loss": None, "chart-throughput": None})
    expect = {"full": full, "hostile": full, "resumed": full, "killed": no_summary,
              "empty": {c: None for c in CHARTS}, "summary-only": no_metrics}
    for case in make_run_dir.CASES:
        d = make_run_dir.write_case(runs, case)
        page = write_report(exe, d)
        dom_text, stderr = run_chromium(chromium, ["--dump-dom", "file://" + os.path.abspath(page)])
        dom = Dom()
        dom.feed(dom_text)
        check(dom.status == "ok", f"{case}: the chart script finished without errors (status {dom.status!r}, {dom.status_text!r})")
        check(dom.errors_hidden and not dom.errors_text.strip(), f"{case}: no script errors on the page: {dom.errors_text.strip()!r}")
        check(not console_errors(stderr), f"{case}: no console messages: {console_errors(stderr)[:3]}")
        for cid in CHARTS:
            c = dom.charts.get(cid)
            if not check(c is not None, f"{case}: {cid} is in the DOM"):
                continue
            check(c[".title"] == 1, f"{case}: {cid} has a title")
            want = expect[case][cid]
            if want is None:
                check(c[".empty-note"] >= 1, f"{case}: {cid} says its data is missing")
                continue
            cls, n = want
            check(c[cls] >= n, f"{case}: {cid} draws at least {n} {cls} marks (got {c[cls]})")
            check(c["path"] + c["rect"] + c["circle"] >= n, f"{case}: {cid} has drawn SVG shapes")
            check(c[".tick"] >= 4, f"{case}: {cid} has tick labels (got {c['.tick']})")
            check(c[".label"] >= 1, f"{case}: {cid} has axis labels")
        if case == "full":
            check("unigram entropy" in dom.chart_text["chart-loss"], "full: the loss chart marks the unigram entropy")
            check("GFLOP/s" in dom.chart_text["chart-roofline"], "full: the roofline names its peak in FLOP/s")
        if case == "resumed":
            check("resumed" in dom.chart_text["chart-loss"], "resumed: the loss chart marks the resumption")
        if case == "hostile":
            check(not any(i.startswith("pwned") for i in dom.ids), f"hostile: no injected elements ({sorted(dom.ids)})")
            check('alert("x")' in dom.chart_text["chart-modules"], "hostile: the odd module name is drawn as text")

    png = os.path.join(work, "full.png")
    run_chromium(chromium, ["--hide-scrollbars", "--window-size=1000,1400", f"--screenshot={png}",
                            "file://" + os.path.abspath(os.path.join(runs, "full", "report.html"))])
    if check(os.path.isfile(png), "a screenshot was written"):
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
    mode, exe, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    if mode == "cli":
        check_cli(exe, work)
    elif mode == "chromium":
        check_chromium(exe, work)
    else:
        make_screenshot(exe, work, sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None)
