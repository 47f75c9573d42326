# placer — see README.md. `make demo` and `make test` are the two set-up commands.
CC      ?= gcc
BUILD   ?= build
OPT     ?= -O2
SAN     ?=
CFLAGS  := -std=c11 $(OPT) -g -Wall -Wextra -Werror -D_GNU_SOURCE $(SAN) \
           -Iinclude -I$(BUILD)/gen -I/usr/include/coin -DPL_SRCDIR='"$(CURDIR)"'
LDLIBS  := -lprotobuf-c -ljansson -lcrypto -lmetis $(shell pkg-config --libs cbc 2>/dev/null || echo -lCbcSolver -lCbc -lCgl -lOsiClp -lClp -lOsi -lCoinUtils) -llapacke -lopenblas -lzstd -lhiredis -lglpk -lm
PROTO   := /usr/include/onnx/onnx.proto

SRC     := $(sort $(wildcard src/*/*.c))
OBJ     := $(SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/onnx/onnx.pb-c.o
CLI_SRC := $(sort $(wildcard cli/*.c))
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TESTS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(sort $(wildcard tests/test_*.c)))
TLIB    := $(BUILD)/tests/testutil.o
LIB     := $(BUILD)/libplacer.a
# Only pl_ symbols leave the library (docs/guide/setup.md, "What the library exports"): each module's
# objects are relinked into one (ld -r, so calls between its files are resolved inside it) and
# every symbol but pl_* is made local; the generated ONNX code joins graph. The unstripped
# module objects form the internal library, for tests that reach a module's internals.
MODULES := $(sort $(patsubst src/%/,%,$(dir $(SRC))))
ILIB    := $(BUILD)/libplacer-internal.a
TESTS_INTERNAL := $(addprefix $(BUILD)/tests/,test_cuts test_multi test_place test_place_lp \
                  test_train_dist test_train_sfb)

PREFIX  ?= /usr/local

# The collectives benchmark is placer's only MPI code (docs/runtime.md, "Measuring
# collectives"); MPI is optional: without mpicc it is not built and `placer profile
# --collectives` says so.
MPICC   := $(shell command -v mpicc 2>/dev/null)
COLLBENCH := $(if $(MPICC),$(BUILD)/placer-collbench)
# placer under mpirun (docs/dist.md): the same command with src/dist compiled by mpicc with
# -DPL_MPI; src/dist is the only file that differs, so its MPI object is linked ahead of the
# library (whose single-process dist.o is then not pulled in).
PLACER_MPI := $(if $(MPICC),$(BUILD)/placer-mpi)
# the pool's primitives under mpirun, for test_dist
DIST_DRIVER := $(if $(MPICC),$(BUILD)/tests/dist_driver)

# a recipe that fails (protoc-c, the pl_ renaming sed) leaves no target that make would take as up to date
.DELETE_ON_ERROR:

.PHONY: all deps test asan demo bench fuzz fuzz-build clean format models talos-models install priors report-shots
all: $(BUILD)/placer $(COLLBENCH) $(PLACER_MPI)

deps:
	@tools/deps.sh

# The generated functions and descriptors are renamed onnx__* -> pl_onnx__* (only pl_ symbols
# leave the library, and rewrite, runtime and split call them across modules).
$(BUILD)/gen/onnx/onnx.pb-c.c $(BUILD)/gen/onnx/onnx.pb-c.h &: $(PROTO) tools/onnx_prefix.sed
	@mkdir -p $(BUILD)/gen/onnx
	protoc-c --c_out=$(BUILD)/gen -I/usr/include $(PROTO)
	sed -i -f tools/onnx_prefix.sed $(BUILD)/gen/onnx/onnx.pb-c.c $(BUILD)/gen/onnx/onnx.pb-c.h

# Generated code is not ours to keep warning-free.
$(BUILD)/gen/onnx/onnx.pb-c.o: $(BUILD)/gen/onnx/onnx.pb-c.c
	$(CC) -std=c11 $(OPT) -g $(SAN) -I$(BUILD)/gen -c $< -o $@

$(BUILD)/%.o: %.c $(BUILD)/gen/onnx/onnx.pb-c.h $(wildcard include/placer/*.h) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

define module_rules
$(BUILD)/internal/$(1).o: $(filter $(BUILD)/src/$(1)/%,$(OBJ)) $(if $(filter graph,$(1)),$(BUILD)/gen/onnx/onnx.pb-c.o)
	@mkdir -p $$(dir $$@)
	$(LD) -r $$^ -o $$@
$(BUILD)/lib/$(1).o: $(BUILD)/internal/$(1).o
	@mkdir -p $$(dir $$@)
	objcopy --wildcard --keep-global-symbol='pl_*' $$< $$@
endef
$(foreach m,$(MODULES),$(eval $(call module_rules,$(m))))

$(LIB): $(MODULES:%=$(BUILD)/lib/%.o)
	@rm -f $@
	ar rcs $@ $^

$(ILIB): $(MODULES:%=$(BUILD)/internal/%.o)
	@rm -f $@
	ar rcs $@ $^

# the verbs' shared option conventions (the library does not include it)
$(CLI_OBJ): cli/cli.h

$(BUILD)/placer: $(CLI_OBJ) $(LIB)
	$(CC) $(CFLAGS) $(CLI_OBJ) $(LIB) $(LDLIBS) -o $@

$(BUILD)/mpi/src/dist/dist.o: src/dist/dist.c include/placer/dist.h
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -DPL_MPI -c $< -o $@

$(BUILD)/placer-mpi: $(BUILD)/mpi/src/dist/dist.o $(CLI_OBJ) $(LIB)
	$(MPICC) $(CFLAGS) $(BUILD)/mpi/src/dist/dist.o $(CLI_OBJ) $(LIB) $(LDLIBS) -o $@

$(BUILD)/tests/dist_driver: tests/dist_driver.c $(BUILD)/mpi/src/dist/dist.o $(LIB)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $< $(BUILD)/mpi/src/dist/dist.o $(LIB) $(LDLIBS) -o $@

$(BUILD)/placer-collbench: tools/collbench.c
	@mkdir -p $(dir $@)
	$(MPICC) -std=c11 $(OPT) -g -Wall -Wextra -Werror $< -o $@

$(BUILD)/tests/testutil.o: tests/testutil.c tests/testutil.h $(wildcard include/placer/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/tests/%: tests/%.c $(TLIB) $(LIB) $(wildcard tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(TLIB) $(LIB) $(LDLIBS) -lcmocka -o $@

# the browser test decodes its screenshots (PNG: zlib)
$(BUILD)/tests/test_report: LDLIBS += -lz

# tests of a module's internals (functions of src/MODULE/*.h): the same rule, the internal library
$(TESTS_INTERNAL): LIB := $(ILIB)
$(TESTS_INTERNAL): $(ILIB)
# test_symbols runs tools/check_symbols.sh on both archives (the exported-symbol check of
# make test and make asan)
$(BUILD)/tests/test_symbols: $(ILIB)

# The include graph first (docs/layers.md): an #include that points up the layers fails it.
test: deps
	@tools/check_layers.sh
	@$(MAKE) --no-print-directory $(BUILD)/placer $(COLLBENCH) $(PLACER_MPI) $(DIST_DRIVER) $(TESTS)
	@tools/run_tests.sh $(BUILD)

asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT=-O1 \
	  SAN="-DPL_CHECKS -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  build-asan/placer $(PLACER_MPI:$(BUILD)/%=build-asan/%) $(DIST_DRIVER:$(BUILD)/%=build-asan/%) \
	  $(TESTS:$(BUILD)/%=build-asan/%)
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 tools/run_tests.sh build-asan

demo: deps
	@$(MAKE) --no-print-directory $(BUILD)/placer
	$(BUILD)/placer deploy models/inception_v3.onnx --catalog catalogs/autodeep-testbed.json --slo 6ms

bench: deps
	@$(MAKE) --no-print-directory $(BUILD)/placer $(PLACER_MPI) $(BUILD)/bench/bench_import $(BUILD)/bench/bench_place $(BUILD)/bench/bench_search $(BUILD)/bench/bench_dist $(BUILD)/bench/bench_runtime $(BUILD)/bench/bench_fidelity $(BUILD)/bench/bench_cores $(BUILD)/bench/bench_codec $(BUILD)/bench/bench_serverless $(BUILD)/bench/bench_multi $(BUILD)/bench/bench_train $(BUILD)/bench/bench_drl $(BUILD)/bench/bench_prior $(BUILD)/bench/bench_optimize $(BUILD)/bench/bench_gpu
	@bench/run.sh $(BUILD)

$(BUILD)/bench/bench_search $(BUILD)/bench/bench_dist: bench/search_table.h

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(LIB) $(LDLIBS) -o $@

# LDLIBS passed down: the fuzz targets link what the library links.
# the screenshots of docs/report.md, from the headless browser (tools/report_shots.sh)
report-shots: deps $(BUILD)/placer
	@tools/report_shots.sh $(BUILD)

fuzz: deps
	@LDLIBS='$(LDLIBS)' tools/fuzz.sh

fuzz-build: deps
	@LDLIBS='$(LDLIBS)' FUZZ_SECONDS=0 tools/fuzz.sh

# The command, library, headers, onnxruntime worker, catalogues and example clusters under
# $(DESTDIR)$(PREFIX) (tools/install.sh says where each goes; docs/runtime.md, "Files").
install: $(BUILD)/placer $(LIB) $(COLLBENCH)
	@PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" tools/install.sh $(BUILD)

models: talos-models
	/usr/bin/python3 tools/export_models.py

# The Talos paper's CNNs that torch would export (models/talos/), written with onnx alone.
talos-models:
	/usr/bin/python3 tools/export_talos_models.py

# TAG's GNN prior (docs/learn.md, "Training the prior"): trained on six zoo models at TAG's
# batch sizes over random topologies, and once more without each model for bench_prior's
# held-out columns. `make -j2 priors` trains two at a time; each is about 8-10 minutes on
# one core (order-only on the binary: a rebuild does not retrain; delete a file to retrain it).
# The weights and their FILE.json (the command, seed, settings, time) are committed.
PRIOR_MODELS = models/inception_v3.onnx:96 models/resnet50.onnx:96 models/vgg19.onnx:96 \
  models/transformer.onnx:480 models/bert_base.onnx:96 models/gpt2_small.onnx:16
PRIOR_HELD = inception_v3 resnet50 vgg19 transformer bert_base gpt2_small
priors: models/priors/tag-gnn.weights $(PRIOR_HELD:%=models/priors/tag-gnn-without-%.weights)

models/priors/tag-gnn.weights: | $(BUILD)/placer
	@mkdir -p models/priors
	$(BUILD)/placer learn-prior $(PRIOR_MODELS) --seed 1 -o $@

models/priors/tag-gnn-without-%.weights: | $(BUILD)/placer
	@mkdir -p models/priors
	$(BUILD)/placer learn-prior $(PRIOR_MODELS) --hold-out $* --seed 1 -o $@

format:
	clang-format -i $(SRC) $(CLI_SRC) include/placer/*.h src/*/*.h tests/*.c tests/*.h

clean:
	rm -rf build build-asan build-fuzz
