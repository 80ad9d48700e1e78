# The two commands of the README: `make report` and `make test`. Both bootstrap what they need.
SHELL := /bin/bash
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
COLLECTION := $(CURDIR)/.build/ansible_collections/nodealloc/kubelet
# Debian packages the test suite uses (installed only where missing): the multi-node tests boot
# debootstrap trees with systemd-nspawn in network namespaces and reach them over SSH; the VM nodes
# (tests/nodes/vmnodes.py) boot the same tree under QEMU with Debian's kernel.
TEST_DEBS ?= systemd-container debootstrap openssh-client iproute2 prometheus chromium qemu-system-x86 qemu-utils linux-image-amd64
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.build
export PATH := $(BIN):$(PATH)

.PHONY: report test bootstrap bootstrap-test stage unit integration sanity lint changelog-lint clean

report: bootstrap stage
	ansible-playbook -i localhost, -c local --check playbooks/recommend.yml \
	  -e nodealloc_report_dir=$(CURDIR)/reports -e ansible_python_interpreter=$(BIN)/python
	@echo "Report written to reports/reservations.json, .md, .html, .csv, reservations-summary.txt and reservations-changes.md"

test: bootstrap-test stage
	bash hack/run-tests.sh

bootstrap:
	@bash hack/bootstrap.sh -r requirements.txt

bootstrap-test:
	@bash hack/bootstrap.sh -r requirements-test.txt $(TEST_DEBS)

stage:
	@bash hack/stage-collection.sh

clean:
	rm -rf .build reports tests/output
