"""Markdown for benchmarks/RESULTS.md from the benches' JSON.

    python3 benchmarks/report.py F                  the kernel table of `tilewave bench -v --json F`, on stdout
    python3 benchmarks/report.py --current          RESULTS.md's current figures and RESULTS-kernels.md, rendered
                                                    from benchmarks/figures.json
    python3 benchmarks/report.py --current --check  exit 1 where either file is not what figures.json renders, a row's
                                                    run names no heading of its history file, or a row has a number
                                                    that its run's section (or history/notes.md) does not
    python3 benchmarks/report.py --add F --run ID --section HEADING
                                                    the kernel rows of bench JSON F into figures.json: each replaces
                                                    the row of its kernel, shape and dtype, or joins its kernel's area

A row of figures.json copies its figures as the run wrote them (strings, never recomputed), so the check can find
each of its numbers in the section the row links to.
"""
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIGURES = HERE / "figures.json"
RESULTS = HERE / "RESULTS.md"
KERNELS = HERE / "RESULTS-kernels.md"
HISTORY = HERE / "history"
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"
MAX_LINES = 150  # issue 42: RESULTS.md opens with a table of the current figures in at most 150 lines
HISTORY_NOTE = ("The diary, oldest first, one file per UTC date of its section headings. A script named there that is "
                "no longer in `benchmarks/` is cited with the commit that holds it (its last version; `git log` on its "
                "path there gives the version of each run).")
NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?(?:e-?\d+)?")


def kernel_cells(r: dict) -> tuple[str, str, str, str]:
    """µs, peer µs, speedup and % BW of a bench result, as the kernel table prints them."""
    return f"{r['us']:.1f}", f"{r['peer_us']:.1f}", f"{r['speedup']:.2f}", f"{r['pct_bw']:.0%}"


def kernel_table(path: str) -> None:
    data = json.load(open(path))
    peaks = data["peaks"]
    print(f"GPU {data['gpu']}, torch {data['torch']}, triton {data['triton']}; measured peaks: copy "
          f"{peaks['copy_GBps']:,.0f} GB/s, bf16 {peaks['bfloat16_GFLOPs'] / 1e3:,.0f} / tf32 "
          f"{peaks['tf32_GFLOPs'] / 1e3:,.0f} / fp32 {peaks['float32_GFLOPs'] / 1e3:,.0f} TFLOP/s\n")
    print("| kernel | shape | dtype | µs | peer µs | speedup | % BW | % FLOP | AI | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in data["results"]:
        us, peer_us, speedup, pct_bw = kernel_cells(r)
        print(f"| {r['kernel']} | {r['shape']} | {r['dtype']} | {us} | {peer_us} | {speedup} | {pct_bw} | "
              f"{r['pct_flops']:.1%} | {r['intensity']:.2f} | {r['verdict']} |")


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation and symbols dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.lower())
    return text.replace(" ", "-")


def history_file(section: str) -> Path:
    return HISTORY / f"{section[:10]}.md"


def run_link(row: dict) -> str:
    return f"[{row['run']}](history/{history_file(row['section']).name}#{anchor(row['section'])})"


def is_kernel(row: dict) -> bool:
    return row["area"].startswith("kernels")


def table(columns: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(cells) + " |" for cells in [columns, ["---"] * len(columns), *rows]]


def render_current(figures: dict) -> str:
    rows = []
    for r in figures["rows"]:
        if not is_kernel(r):
            rows.append([r["area"], r["workload"], r["machine"], r["mode"], r["ours"], r["peer"], r["ratio"],
                         r.get("bar", ""), r["date"], run_link(r)])
        elif r.get("summary"):
            rows.append([r["area"], f"`{r['kernel']}` {r['workload']}", r["machine"], r["mode"], f"{r['ours']} µs",
                         f"{r['peer']} µs" if r["peer"] else "", r["ratio"], "", r["date"], run_link(r)])
    out = table(["area", "workload", "machine", "dtype / mode", "tilewave", "peer, same run", "× peer", "bar",
                 "date (UTC)", "run"], rows)
    out += ["", "Every kernel row (model and large shapes, per dtype): [RESULTS-kernels.md](RESULTS-kernels.md).", "",
            "## History", "", HISTORY_NOTE, ""]
    for path in sorted(HISTORY.glob("*.md")):
        lines = path.read_text().splitlines()
        dated = path.stem[0].isdigit()
        what = f"{sum(l.startswith('## ') for l in lines)} sections" if dated else lines[0].removeprefix("# ")
        out.append(f"- [{path.name}](history/{path.name}): {what}")
    return "\n".join(out)


def render_kernels(figures: dict) -> str:
    out = ["# Kernel figures", "",
           "Generated by `python3 benchmarks/report.py --current` from `benchmarks/figures.json`; do not edit.",
           "The current figures of every area: [RESULTS.md](RESULTS.md).", ""]
    for area, note in figures["kernel_areas"].items():
        rows = [[r["kernel"], r["workload"], r["machine"], r["mode"], r["ours"], r["peer"], r["ratio"],
                 r.get("roofline", ""), r["date"], run_link(r)] for r in figures["rows"] if r["area"] == area]
        out += [f"## {area.removeprefix('kernels: ')}", "", note, ""]
        out += table(["kernel", "shape", "machine", "dtype / mode", "tilewave µs", "peer µs", "× peer",
                      "of roofline", "date (UTC)", "run"], rows) + [""]
    return "\n".join(out)


def dump(figures: dict, path: Path) -> None:
    """figures.json with one row a line, so that a diff shows the rows a change touched."""
    text = json.dumps({k: v for k, v in figures.items() if k != "rows"}, ensure_ascii=False, indent=1)
    rows = ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in figures["rows"])
    path.write_text(f'{text[:-2]},\n "rows": [\n{rows}\n ]\n}}\n')


def add_bench(bench_path: str, run: str, section: str, figures_path: Path = FIGURES) -> None:
    figures = json.loads(figures_path.read_text())
    bench = json.load(open(bench_path))
    machine = bench["gpu"].removeprefix("NVIDIA ")
    for b in bench["results"]:
        us, peer_us, speedup, pct_bw = kernel_cells(b)
        new = {"kernel": b["kernel"], "workload": b["shape"], "machine": machine, "mode": b["dtype"], "ours": us,
               "peer": peer_us, "ratio": f"{speedup}×", "roofline": f"{pct_bw} BW",
               "date": section.split(" UTC")[0], "run": run, "section": section}
        rows = figures["rows"]
        same = [i for i, r in enumerate(rows) if (r.get("kernel"), r["workload"], r["mode"]) ==
                (b["kernel"], b["shape"], b["dtype"])]
        family = [i for i, r in enumerate(rows) if r.get("kernel") == b["kernel"]]
        if same:
            old = rows[same[0]]
            rows[same[0]] = {"area": old["area"], **new, **({"summary": True} if old.get("summary") else {})}
        else:
            area = rows[family[-1]]["area"] if family else f"kernels: {b['kernel']}"
            figures["kernel_areas"].setdefault(area, "")
            rows.insert(family[-1] + 1 if family else len(rows), {"area": area, **new})
    dump(figures, figures_path)


def spliced(results: str, block: str) -> str:
    head, sep, rest = results.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise SystemExit(f"{RESULTS}: no {BEGIN} ... {END} block; put the two markers where the table goes")
    return f"{head}{BEGIN}\n{block}\n{END}{tail}"


def section_text(section: str) -> str:
    """The text of a history section: its heading to the next heading of its level."""
    path = history_file(section)
    lines = path.read_text().splitlines() if path.exists() else []
    start = next((i for i, l in enumerate(lines) if l == f"## {section}"), None)
    if start is None:
        return ""
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


def row_problems(figures: dict) -> list[str]:
    notes = (HISTORY / "notes.md").read_text()
    problems = []
    for r in figures["rows"]:
        text = section_text(r["section"])
        if not text:
            problems.append(f"{r['run']} {r['workload']}: no heading '## {r['section']}' in "
                            f"{history_file(r['section'])}")
            continue
        for field in ("ours", "peer", "ratio", "bar"):
            for n in NUMBER.findall(r.get(field, "")):
                if not re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", text + notes):
                    problems.append(f"{r['run']} {r['workload']}: {field} has {n}, which neither its section nor "
                                    "history/notes.md has")
    return problems


def current(check: bool, figures_path: Path = FIGURES, results_path: Path = RESULTS,
            kernels_path: Path = KERNELS) -> int:
    figures = json.loads(figures_path.read_text())
    results = spliced(results_path.read_text(), render_current(figures))
    kernels = render_kernels(figures)
    if not check:
        results_path.write_text(results)
        kernels_path.write_text(kernels)
        return 0
    problems = row_problems(figures)
    for path, want in ((results_path, results), (kernels_path, kernels)):
        if not path.exists() or path.read_text() != want:
            problems.append(f"{path} is not what {figures_path.name} renders: "
                            "run python3 benchmarks/report.py --current")
    if (n := len(results.splitlines())) > MAX_LINES:
        problems.append(f"{results_path} has {n} lines, more than {MAX_LINES}: move rows to RESULTS-kernels.md")
    print("\n".join(problems) or "RESULTS.md and RESULTS-kernels.md are current")
    return 1 if problems else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--current"]:
        sys.exit(current(check=args[1:] == ["--check"]))
    if args[:1] == ["--add"] and len(args) == 6 and args[2] == "--run" and args[4] == "--section":
        add_bench(args[1], run=args[3], section=args[5])
    elif len(args) == 1 and not args[0].startswith("--"):
        kernel_table(args[0])
    else:
        sys.exit(__doc__)
