# Build and install hood for packagers and `sudo make install`:
#   make && sudo make install                  # into /usr/local
#   make install PREFIX=/usr DESTDIR=$PWD/pkg  # staged, for a package
# Installs the binary, the runtime library `hood calls run`/`hood trace record` preload (found
# at BINDIR/../lib/hood/ by the binary; the binary also carries a copy of its own), the C
# header and static library for linking the runtime, the man page and shell completions.

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
CARGO ?= cargo
CARGO_TARGET_DIR ?= target
CARGOFLAGS ?= --locked
# cargo's profile (dev: a quick unoptimized build, for trying the install out).
PROFILE ?= release
RELEASE := $(CARGO_TARGET_DIR)/$(if $(filter dev,$(PROFILE)),debug,$(PROFILE))
INSTALL ?= install

.PHONY: all build install uninstall

all: build

build:
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(CARGO) build --profile $(PROFILE) $(CARGOFLAGS) -p hood -p hood-rt

install: build
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/hood $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DATADIR)/bash-completion/completions \
		$(DESTDIR)$(DATADIR)/zsh/site-functions $(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	$(INSTALL) -m 0755 $(RELEASE)/hood $(DESTDIR)$(BINDIR)/hood
	$(INSTALL) -m 0644 $(RELEASE)/libhood_rt.so $(DESTDIR)$(LIBDIR)/hood/libhood_rt.so
	$(INSTALL) -m 0644 $(RELEASE)/libhood_rt.a $(DESTDIR)$(LIBDIR)/hood/libhood_rt.a
	$(INSTALL) -m 0644 crates/hood-rt/include/hood.h $(DESTDIR)$(INCLUDEDIR)/hood.h
	$(RELEASE)/hood --generate man > $(DESTDIR)$(MANDIR)/man1/hood.1
	$(RELEASE)/hood --generate complete-bash > $(DESTDIR)$(DATADIR)/bash-completion/completions/hood
	$(RELEASE)/hood --generate complete-zsh > $(DESTDIR)$(DATADIR)/zsh/site-functions/_hood
	$(RELEASE)/hood --generate complete-fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/hood.fish

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/hood $(DESTDIR)$(LIBDIR)/hood/libhood_rt.so \
		$(DESTDIR)$(LIBDIR)/hood/libhood_rt.a $(DESTDIR)$(INCLUDEDIR)/hood.h \
		$(DESTDIR)$(MANDIR)/man1/hood.1 $(DESTDIR)$(DATADIR)/bash-completion/completions/hood \
		$(DESTDIR)$(DATADIR)/zsh/site-functions/_hood \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/hood.fish
	-rmdir $(DESTDIR)$(LIBDIR)/hood
