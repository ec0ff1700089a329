# make install PREFIX=/usr/local            binaries, man pages, completions, contrib hooks and jackin-load
# make install PREFIX=/usr DESTDIR=/tmp/pkg  staged, for a package
# make install BIN_DIR=target/debug          install binaries built elsewhere (no release build)
# make uninstall PREFIX=…                    removes exactly what install puts there
PREFIX ?= /usr/local
DESTDIR ?=
BIN_DIR ?= target/release
CARGO ?= cargo
INSTALL ?= install

BINS := jackin-assess jackin-keep jackin-purge jackin-reconcile jackin-restore jackin-move jackin-hosts \
	jackin-notify jackin-idle
bindir := $(PREFIX)/bin
mandir := $(PREFIX)/share/man/man1
bashdir := $(PREFIX)/share/bash-completion/completions
zshdir := $(PREFIX)/share/zsh/site-functions
fishdir := $(PREFIX)/share/fish/vendor_completions.d
sharedir := $(PREFIX)/share/jackin

.PHONY: all build install uninstall

all: build

# Only jackin-restore fetches (tier 3's role source over https and ssh, the cargo feature
# `fetch`, which links OpenSSL). The other tools are built without it, in a target directory of
# their own: no libssl or libcrypto to load, so each starts as fast as git. An engine over TLS is
# reached by every build (through the docker CLI, lib/engines/docker/tls.rs).
ifeq ($(BIN_DIR),target/release)
LEAN_DIR := target/lean/release
else
LEAN_DIR := $(BIN_DIR)
endif

# Only the default BIN_DIR is built here; any other BIN_DIR must already hold the binaries.
build:
ifeq ($(BIN_DIR),target/release)
	$(CARGO) build --release --locked --bin jackin-restore
	$(CARGO) build --release --locked --no-default-features --bins --target-dir target/lean
endif

install: build
	$(INSTALL) -d $(DESTDIR)$(bindir) $(DESTDIR)$(mandir) $(DESTDIR)$(bashdir) $(DESTDIR)$(zshdir) \
		$(DESTDIR)$(fishdir) $(DESTDIR)$(sharedir)/hooks $(DESTDIR)$(sharedir)/git \
		$(DESTDIR)$(sharedir)/cron $(DESTDIR)$(sharedir)/systemd $(DESTDIR)$(sharedir)/launchd \
		$(DESTDIR)$(sharedir)/jackin
	for b in $(BINS); do \
		src=$(LEAN_DIR)/$$b; [ $$b != jackin-restore ] || src=$(BIN_DIR)/$$b; \
		$(INSTALL) -m 755 $$src $(DESTDIR)$(bindir)/$$b || exit 1; \
		$(INSTALL) -m 644 man/$$b.1 $(DESTDIR)$(mandir)/$$b.1 || exit 1; \
		$(INSTALL) -m 644 completions/$$b.bash $(DESTDIR)$(bashdir)/$$b || exit 1; \
		$(INSTALL) -m 644 completions/_$$b $(DESTDIR)$(zshdir)/_$$b || exit 1; \
		$(INSTALL) -m 644 completions/$$b.fish $(DESTDIR)$(fishdir)/$$b.fish || exit 1; \
	done
	$(INSTALL) -m 755 contrib/hooks/jackin-exit-hook $(DESTDIR)$(bindir)/jackin-exit-hook
	$(INSTALL) -m 755 contrib/hooks/jackin-exit-hook $(DESTDIR)$(sharedir)/hooks/jackin-exit-hook
	# jackin-load finds the exit hook beside itself: bin/ here, ../hooks/ under share/jackin.
	$(INSTALL) -m 755 contrib/jackin/jackin-load $(DESTDIR)$(bindir)/jackin-load
	$(INSTALL) -m 755 contrib/jackin/jackin-load $(DESTDIR)$(sharedir)/jackin/jackin-load
	$(INSTALL) -m 755 contrib/git/reference-transaction $(DESTDIR)$(sharedir)/git/reference-transaction
	# The cron files' PATH names $(bindir), where this install put the tools.
	for c in contrib/cron/*; do \
		sed 's|^PATH=/usr/local/bin:|PATH=$(bindir):|' $$c > $(DESTDIR)$(sharedir)/cron/$${c##*/} || exit 1; \
		chmod 644 $(DESTDIR)$(sharedir)/cron/$${c##*/} || exit 1; \
	done
	# The units as shipped start the tools from ~/.cargo/bin (cargo install); installed copies
	# point at $(bindir), where this install put them (no DESTDIR: that is the staging root).
	for u in contrib/systemd/*; do \
		sed 's|%h/\.cargo/bin/|$(bindir)/|g' $$u > $(DESTDIR)$(sharedir)/systemd/$${u##*/} || exit 1; \
		chmod 644 $(DESTDIR)$(sharedir)/systemd/$${u##*/} || exit 1; \
	done
	# The launchd agents (macOS) as shipped start /usr/local/bin/jackin-…; installed copies start
	# $(bindir)/jackin-…. They are installed on every system, as the systemd units are: a package
	# built on Linux for a Mac has them too.
	for a in contrib/launchd/*.plist; do \
		sed 's|/usr/local/bin/jackin-|$(bindir)/jackin-|g' $$a > $(DESTDIR)$(sharedir)/launchd/$${a##*/} || exit 1; \
		chmod 644 $(DESTDIR)$(sharedir)/launchd/$${a##*/} || exit 1; \
	done

uninstall:
	for b in $(BINS); do \
		rm -f $(DESTDIR)$(bindir)/$$b $(DESTDIR)$(mandir)/$$b.1 $(DESTDIR)$(bashdir)/$$b \
			$(DESTDIR)$(zshdir)/_$$b $(DESTDIR)$(fishdir)/$$b.fish; \
	done
	rm -f $(DESTDIR)$(bindir)/jackin-exit-hook $(DESTDIR)$(bindir)/jackin-load
	rm -rf $(DESTDIR)$(sharedir)
