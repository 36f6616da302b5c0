/*
 * hello_mpi.c - every rank says where it runs.
 * Part of aiinfra.fabric's mpi_bench role (the seed's "MPI Hello World", rewritten).
 * Output, one line per rank (mpi_run parse=seed reads it):
 *   Hello from processor <host>, rank <r> out of <n> processors
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    char host[MPI_MAX_PROCESSOR_NAME];
    int rank, size, len;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_processor_name(host, &len);

    printf("Hello from processor %s, rank %d out of %d processors\n", host, rank, size);
    fflush(stdout);

    MPI_Finalize();
    return 0;
}
