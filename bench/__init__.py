"""seglog's benchmark suite (not tests): each benchmark times seglog beside a peer or a physical
limit in the same run and reports ratios. See bench/README.md and BENCHMARKS.md."""
