"""Turn `tilewave bench --json` output into the markdown table that goes into benchmarks/RESULTS.md."""
import json
import sys


def main(path: str) -> None:
    data = json.load(open(path))
    peaks = data["peaks"]
    print(f"GPU {data['gpu']}, torch {data['torch']}, triton {data['triton']}; measured peaks: copy "
          f"{peaks['copy_GBps']:,.0f} GB/s, bf16 {peaks['bfloat16_GFLOPs'] / 1e3:,.0f} / tf32 "
          f"{peaks['tf32_GFLOPs'] / 1e3:,.0f} / fp32 {peaks['float32_GFLOPs'] / 1e3:,.0f} TFLOP/s\n")
    print("| kernel | shape | dtype | µs | peer µs | speedup | % BW | % FLOP | AI | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in data["results"]:
        print(f"| {r['kernel']} | {r['shape']} | {r['dtype']} | {r['us']:.1f} | {r['peer_us']:.1f} | "
              f"{r['speedup']:.2f} | {r['pct_bw']:.0%} | {r['pct_flops']:.1%} | {r['intensity']:.2f} | {r['verdict']} |")


if __name__ == "__main__":
    main(sys.argv[1])
