# `make all` runs exactly what CI runs.
.PHONY: all install test style bench demo
all:
	bash .ci/run
install:
	python3 -m pip install -e '.[test,style]'
	bash scripts/install-versitygw.sh
style:
	bash scripts/style-check
test:
	cargo test -p parcomm-core
	python3 -m pytest -q
bench:
	python3 benchmarks/sim_speed.py
demo:
	parcomm repro --quick
