"""The six sections of the report, one module each, in the order of
bench/README.md: precision, cost, passthrough, clamp, scale, economy. Each
module's function takes the Bench and returns the section's Markdown; it
adds to the Bench's targets and warnings, and raises Failed when a program
did not run. main.py holds their order and numbers."""
