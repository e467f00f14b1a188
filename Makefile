# The single entry point for local work and CI. `make` lists the targets.
.DEFAULT_GOAL := help
.PHONY: help run seed fmt lint peers test test-local test-nextest bench loadtest loadtest-backends

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

run: ## run svc on the embedded defaults (./data, 127.0.0.1:3000)
	cargo run --release -- up

seed: ## seed ./data with the committed 2,990-paper sample and its made-up scholarly layer (--social)
	cargo run --release -- seed --social fixtures/arxiv-sample-3k.jsonl.gz

fmt: ## format the code
	cargo fmt --all

lint: ## rustfmt check and clippy with warnings denied
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

peers: ## install the real servers the tests use into .peers/ (tansu)
	scripts/peers.sh

test: ## the README's test command (what .ci/run runs): peers, then every test
	scripts/test.sh

test-local: ## the tests that need no server: unit, conformance (embedded, CQL test server), router, embedded end-to-end
	cargo test --workspace --exclude tests --exclude eventlog
	cargo test -p eventlog --lib
	cargo test -p eventlog --doc
	cargo test -p tests --test integration first_hour:: bad_input:: crash::
	cargo test -p tests --test integration e2e::embedded

test-nextest: ## the same tests under nextest, plus the doc tests nextest skips
	scripts/peers.sh
	cargo nextest run --workspace
	cargo test --workspace --doc

bench: ## criterion benches
	cargo bench --workspace

loadtest: ## the load test of docs/performance.md (needs wrk; uses ../shared/data)
	scripts/loadtest/run.sh

loadtest-backends: peers ## seed and catch-up time on the embedded log vs Kafka (tansu), same run
	scripts/loadtest/backends.sh
