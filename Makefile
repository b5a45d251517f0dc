# The two commands of the README's quick start: `make demo` and `make test`.
# Both install what they need (MariaDB server, sysbench, PostgreSQL) with apt when missing.

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get
CARGO ?= cargo

.PHONY: demo demo-quick test test-busy deps test-deps build bench clean man install uninstall

## Install the MariaDB server, sysbench, and PostgreSQL 15 with pgaudit and contrib
## (auto_explain, pg_stat_statements, pgbench) when missing (Debian/Ubuntu). The PostgreSQL
## package creates the `postgres` user dbtax runs its managed clusters as when root.
PG_PACKAGES := postgresql-15 postgresql-15-pgaudit postgresql-contrib
deps:
	@if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ] && [ ! -x /usr/sbin/mysqld ] \
	   || ! command -v sysbench >/dev/null 2>&1 \
	   || ! ls /usr/lib/postgresql/*/lib/pgaudit.so >/dev/null 2>&1 \
	   || ! ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1; then \
	  echo "Installing mariadb-server, sysbench and $(PG_PACKAGES) with apt-get..."; \
	  $(APT) update -q && $(APT) install -y -q mariadb-server sysbench $(PG_PACKAGES); \
	fi

## The tests also open the HTML report in headless Chromium, start their own sshd for the
## agents (openssh-server) and make network namespaces (iproute2).
test-deps: deps
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing chromium with apt-get (the report's browser test)..."; \
	  $(APT) update -q && $(APT) install -y -q chromium; \
	}
	@[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 || { \
	  echo "Installing openssh-server and iproute2 with apt-get (the agents' tests)..."; \
	  $(APT) update -q && $(APT) install -y -q openssh-server openssh-client iproute2; \
	}
	@command -v openssl >/dev/null 2>&1 || { \
	  echo "Installing openssl with apt-get (the TLS test makes its certificates)..."; \
	  $(APT) update -q && $(APT) install -y -q openssl; \
	}

build:
	$(CARGO) build --release

## The main job: general log, slow log and audit vs off on a throwaway MariaDB.
demo: deps build
	./target/release/dbtax demo

demo-quick: deps build
	./target/release/dbtax demo --quick

## Formatting, lints, and every test (unit, CLI, statistics, real MariaDB and PostgreSQL,
## agents over a real sshd). With DBTAX_TEST_NEIGHBOUR=1 (as CI runs it) a neighbour takes a
## core now and then for the whole suite (tests/neighbour.sh, started and stopped by its pid):
## every test must pass on a busy machine.
test: test-deps
	$(CARGO) fmt --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links -D rustdoc::private_intra_doc_links" \
	  $(CARGO) doc --workspace --no-deps --quiet
	@if [ -n "$$DBTAX_TEST_NEIGHBOUR" ] && [ "$$DBTAX_TEST_NEIGHBOUR" != 0 ]; then \
	  bash tests/neighbour.sh & pid=$$!; \
	  echo "neighbour: a CPU hog (pid $$pid) takes one core 4-6 s in every 9-13 s"; \
	  $(CARGO) test --workspace; rc=$$?; kill $$pid; wait $$pid 2>/dev/null; exit $$rc; \
	else \
	  $(CARGO) test --workspace; \
	fi

## The suite with its neighbour on, as CI runs it.
test-busy:
	DBTAX_TEST_NEIGHBOUR=1 $(MAKE) test

## dbtax vs sysbench and vs pgbench: client CPU per query and QPS, by threads (prints ratios).
bench: deps build
	bash bench/vs-sysbench.sh
	bash bench/vs-pgbench.sh

## The man pages (dbtax.1, dbtax-run.1, …), made from the same definitions as --help.
man: build
	./target/release/dbtax man --dir target/man

## The binary, the man pages and the bash, zsh and fish completions, where a Debian user
## expects them: `make install` (as root) or `make install PREFIX=$HOME/.local`.
PREFIX ?= /usr/local
BINDIR := $(DESTDIR)$(PREFIX)/bin
MANDIR := $(DESTDIR)$(PREFIX)/share/man/man1
install: build
	install -d $(BINDIR) $(MANDIR) $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	  $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 755 target/release/dbtax $(BINDIR)/dbtax
	./target/release/dbtax man --dir $(MANDIR)
	./target/release/dbtax completions bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/dbtax
	./target/release/dbtax completions zsh > $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_dbtax
	./target/release/dbtax completions fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/dbtax.fish
	@echo "installed dbtax in $(BINDIR), its man pages in $(MANDIR) (man dbtax), completions for bash, zsh and fish"

uninstall:
	rm -f $(BINDIR)/dbtax $(MANDIR)/dbtax.1 $(MANDIR)/dbtax-*.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/dbtax \
	  $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_dbtax \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/dbtax.fish

clean:
	$(CARGO) clean
