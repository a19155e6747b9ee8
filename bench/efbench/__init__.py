"""The epollfix benchmark suite behind bench/run (see bench/README.md):
runner.py runs the programs with and without the library, stats.py turns
samples and runs into figures, report.py writes the tables, plots and
report.md, sections/ holds one module per section, and main.py is the
command. tests/matrix/economy runs its variants with runner.alternate,
takes its medians with stats.Fig and writes its table with report.table."""
