"""benchmarks/report.py --current: RESULTS.md's table is what figures.json renders, short, and its rows are sourced."""
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("report", ROOT / "benchmarks" / "report.py")
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)


def copies(tmp_path):
    paths = {name: tmp_path / name for name in ("figures.json", "RESULTS.md", "RESULTS-kernels.md")}
    for name, path in paths.items():
        path.write_text((ROOT / "benchmarks" / name).read_text())
    return paths


def check(paths) -> int:
    return report.current(True, paths["figures.json"], paths["RESULTS.md"], paths["RESULTS-kernels.md"])


def test_the_committed_results_are_what_figures_json_renders_within_the_line_bound(tmp_path):
    paths = copies(tmp_path)
    assert check(paths) == 0
    assert len(paths["RESULTS.md"].read_text().splitlines()) <= report.MAX_LINES


def test_a_hand_edited_table_fails_the_check_and_rendering_repairs_it(tmp_path):
    paths = copies(tmp_path)
    results = paths["RESULTS.md"].read_text()
    paths["RESULTS.md"].write_text(results.replace("55.2 ms (424×)", "50.2 ms (424×)", 1))
    assert check(paths) == 1
    report.current(False, paths["figures.json"], paths["RESULTS.md"], paths["RESULTS-kernels.md"])
    assert paths["RESULTS.md"].read_text() == results


def test_a_row_with_a_number_its_run_never_measured_fails_the_check(tmp_path):
    paths = copies(tmp_path)
    figures = json.loads(paths["figures.json"].read_text())
    figures["rows"][0]["ours"] = "987.65 ms"
    paths["figures.json"].write_text(json.dumps(figures, ensure_ascii=False))
    report.current(False, paths["figures.json"], paths["RESULTS.md"], paths["RESULTS-kernels.md"])
    assert check(paths) == 1


def test_every_run_link_names_a_heading_of_its_history_file():
    figures = json.loads(report.FIGURES.read_text())
    for row in figures["rows"]:
        assert report.section_text(row["section"]), row["run"]


def test_anchors_follow_githubs_rule():
    assert report.anchor("2026-12-02 17:07–17:16 UTC — CPU (C7): the same Zen 4 with `--bf16`") == \
        "2026-12-02-17071716-utc--cpu-c7-the-same-zen-4-with---bf16"


def test_a_bench_json_replaces_its_kernels_rows_and_adds_new_shapes_beside_them(tmp_path):
    paths = copies(tmp_path)
    shape = "Kokoro iSTFT 10 s [1, 11, 48001] n_fft 20 hop 5"
    result = {"kernel": "istft", "dtype": "float32", "us": 6.54, "peer_us": 140.0, "speedup": 21.41, "pct_bw": 0.181,
              "pct_flops": 0.0, "intensity": 0.5, "verdict": "latency-bound"}
    bench = {"gpu": "NVIDIA H200", "results": [{**result, "shape": shape}, {**result, "shape": "new [1, 2, 3]"}]}
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    section = "2026-12-07 10:00–10:05 UTC — session 26, H200: istft"
    before = json.loads(paths["figures.json"].read_text())["rows"]
    report.add_bench(str(tmp_path / "bench.json"), run="S26a", section=section, figures_path=paths["figures.json"])
    rows = json.loads(paths["figures.json"].read_text())["rows"]
    assert len(rows) == len(before) + 1
    replaced = [r for r in rows if r.get("kernel") == "istft" and r["workload"] == shape and r["mode"] == "float32"]
    assert [(r["ours"], r["peer"], r["ratio"], r["run"], r["date"]) for r in replaced] == \
        [("6.5", "140.0", "21.41×", "S26a", "2026-12-07 10:00–10:05")]
    added = next(i for i, r in enumerate(rows) if r["workload"] == "new [1, 2, 3]")
    assert rows[added - 1]["kernel"] == "istft" and rows[added]["area"] == "kernels: spectral"
