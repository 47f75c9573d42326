#!/bin/sh
# For test_dist: under mpirun, rank 1's host "lacks" the model (its path is replaced by a
# missing file), the other ranks run placer-mpi with the arguments as given.

bin=${PLACER_MPI_BIN:?set by test_dist}
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then
  verb=$1; shift; shift
  exec "$bin" "$verb" models/missing.onnx "$@"
fi
exec "$bin" "$@"
