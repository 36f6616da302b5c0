/*
 * reduce_mpi.c - MPI_Reduce of the ranks' numbers to rank 0, which checks the sum.
 * Part of aiinfra.fabric's mpi_bench role (the seed's MPI_Reduce example, rewritten).
 * Each rank contributes its rank number, so the root must get 0+1+...+(n-1).
 * Output (mpi_run parse=seed reads it):
 *   Process <r> on <host> contributing <r>
 *   Process 0 on <host> (root) received reduced sum: <sum> (Expected: <n(n-1)/2>)
 * Exit status 1 on the root when the sum is wrong.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    char host[MPI_MAX_PROCESSOR_NAME];
    int rank, size, len, mine, total = 0, status = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);

    mine = rank;
    printf("Process %d on %s contributing %d\n", rank, host, mine);
    fflush(stdout);

    MPI_Reduce(&mine, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        int expected = size * (size - 1) / 2;
        printf("Process %d on %s (root) received reduced sum: %d (Expected: %d)\n", rank, host, total, expected);
        fflush(stdout);
        status = total == expected ? 0 : 1;
    }

    MPI_Finalize();
    return status;
}
