/*
 * allreduce_mpi.c - MPI_Allreduce of the ranks' numbers; every rank checks the sum.
 * Part of aiinfra.fabric's mpi_bench role (the seed's MPI_Allreduce example, rewritten).
 * Output (mpi_run parse=seed reads it):
 *   Process <r> on <host> contributing data <r>
 *   Process <r> on <host> received reduced sum <sum> via Allreduce (Expected: <n(n-1)/2>)
 * Exit status 1 on any rank whose sum is wrong.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    char host[MPI_MAX_PROCESSOR_NAME];
    int rank, size, len, mine, total = -1, expected;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);

    mine = rank;
    printf("Process %d on %s contributing data %d\n", rank, host, mine);
    fflush(stdout);

    MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    expected = size * (size - 1) / 2;
    printf("Process %d on %s received reduced sum %d via Allreduce (Expected: %d)\n",
           rank, host, total, expected);
    fflush(stdout);

    MPI_Finalize();
    return total == expected ? 0 : 1;
}
