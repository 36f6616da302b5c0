/*
 * fabric_mpi_bench.c - a small MPI benchmark in the style of the OSU Micro-Benchmarks.
 * Part of aiinfra.fabric's mpi_bench role; written for the collection (not OSU code).
 *
 *   fabric_mpi_bench latency   [-m MAX] [-i ITERS] [-x WARMUP]   ping-pong, ranks 0 and 1
 *   fabric_mpi_bench bw        [-m MAX] [-i ITERS] [-x WARMUP] [-w WINDOW]
 *                                                                 windowed streaming 0 -> 1
 *   fabric_mpi_bench allreduce [-m MAX] [-i ITERS] [-x WARMUP]   MPI_Allreduce, all ranks
 *   fabric_mpi_bench all       [...]                              the three, one after the other,
 *                                                                 in one job (one table each)
 *
 * Sizes are 0 (latency only), 1, 2, 4, ... up to MAX bytes (default 1048576).
 * Messages larger than 64 KiB run ITERS/10 iterations (at least 2), like OSU does.
 * The output is OSU-shaped, so mpi_run parse=osu reads it:
 *
 *   # aiinfra.fabric MPI Latency Test v1.0
 *   # Size          Latency (us)       <- one-way latency: round trip / 2
 *   # Size      Bandwidth (MB/s)       <- MB = 10^6 bytes
 *   # Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations
 *
 * allreduce sums MPI_INT vectors whose elements are the rank number and checks every
 * element of the result on every rank: a wrong result prints "# Validation failed"
 * and exits 1. Latency and bandwidth need at least 2 ranks; other ranks wait. To measure
 * between two nodes, place ranks 0 and 1 on different nodes (Open MPI: --map-by node).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERSION "1.0"
#define LARGE_MESSAGE 65536
#define MAX_WINDOW 1024

static void usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: fabric_mpi_bench latency|bw|allreduce|all [-m MAX_BYTES] [-i ITERS] [-x WARMUP] [-w WINDOW]\n");
}

static int iterations_for(size_t size, int iters)
{
    int n = size > LARGE_MESSAGE ? iters / 10 : iters;
    return n < 2 ? 2 : n;
}

static int run_latency(int rank, size_t max, int iters, int warmup, char *buf)
{
    MPI_Status st;
    size_t size;

    if (rank == 0) {
        printf("# aiinfra.fabric MPI Latency Test v%s\n# Size          Latency (us)\n", VERSION);
        fflush(stdout);
    }
    for (size = 0; size <= max; size = size ? size * 2 : 1) {
        int n = iterations_for(size, iters), i;
        double start = 0.0;

        MPI_Barrier(MPI_COMM_WORLD);
        for (i = 0; i < n + warmup; i++) {
            if (i == warmup)
                start = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &st);
            } else if (rank == 1) {
                MPI_Recv(buf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &st);
                MPI_Send(buf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) {
            double us = (MPI_Wtime() - start) * 1e6 / (2.0 * n);
            printf("%-10lu%18.2f\n", (unsigned long)size, us);
            fflush(stdout);
        }
    }
    return 0;
}

static int run_bandwidth(int rank, size_t max, int iters, int warmup, int window, char *buf)
{
    MPI_Request req[MAX_WINDOW];
    MPI_Status st[MAX_WINDOW];
    size_t size;
    char ack = 0;

    if (rank == 0) {
        printf("# aiinfra.fabric MPI Bandwidth Test v%s\n# Size      Bandwidth (MB/s)\n", VERSION);
        fflush(stdout);
    }
    for (size = 1; size <= max; size *= 2) {
        int n = iterations_for(size, iters), i, w;
        double start = 0.0;

        MPI_Barrier(MPI_COMM_WORLD);
        for (i = 0; i < n + warmup; i++) {
            if (i == warmup)
                start = MPI_Wtime();
            if (rank == 0) {
                for (w = 0; w < window; w++)
                    MPI_Isend(buf, (int)size, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(window, req, st);
                MPI_Recv(&ack, 1, MPI_CHAR, 1, 3, MPI_COMM_WORLD, &st[0]);
            } else if (rank == 1) {
                for (w = 0; w < window; w++)
                    MPI_Irecv(buf, (int)size, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(window, req, st);
                MPI_Send(&ack, 1, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) {
            double seconds = MPI_Wtime() - start;
            double mbs = (double)size * window * n / 1e6 / seconds;
            printf("%-10lu%20.2f\n", (unsigned long)size, mbs);
            fflush(stdout);
        }
    }
    return 0;
}

static int run_allreduce(int rank, int nranks, size_t max, int iters, int warmup)
{
    size_t size;
    size_t max_count = max / sizeof(int) ? max / sizeof(int) : 1;
    int *send = malloc(max_count * sizeof(int));
    int *recv = malloc(max_count * sizeof(int));
    int bad = 0, any_bad = 0;
    int expected = nranks * (nranks - 1) / 2;
    size_t k;

    if (!send || !recv) {
        fprintf(stderr, "fabric_mpi_bench: out of memory for %lu bytes\n", (unsigned long)max);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (k = 0; k < max_count; k++)
        send[k] = rank;
    if (rank == 0) {
        printf("# aiinfra.fabric MPI Allreduce Latency Test v%s\n# Datatype: MPI_INT.\n"
               "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n", VERSION);
        fflush(stdout);
    }
    for (size = sizeof(int); size <= max; size *= 2) {
        int count = (int)(size / sizeof(int));
        int n = iterations_for(size, iters), i;
        double start = 0.0, mine, lo, hi, sum;

        MPI_Barrier(MPI_COMM_WORLD);
        for (i = 0; i < n + warmup; i++) {
            if (i == warmup)
                start = MPI_Wtime();
            MPI_Allreduce(send, recv, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        }
        mine = (MPI_Wtime() - start) * 1e6 / n;
        for (k = 0; k < (size_t)count; k++)
            if (recv[k] != expected)
                bad = 1;
        MPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("%-10lu%18.2f%18.2f%18.2f%12d\n", (unsigned long)size, sum / nranks, lo, hi, n);
            fflush(stdout);
        }
    }
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_bad && rank == 0) {
        printf("# Validation failed: an Allreduce result differed from %d\n", expected);
        fflush(stdout);
    }
    free(send);
    free(recv);
    return any_bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    int rank, nranks, iters = 100, warmup = 10, window = 64, i, rc = 0;
    size_t max = 1048576;
    const char *test;
    char *buf = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    if (argc < 2) {
        usage(rank);
        MPI_Finalize();
        return 2;
    }
    test = argv[1];
    for (i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m"))
            max = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "-i"))
            iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-x"))
            warmup = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-w"))
            window = atoi(argv[i + 1]);
        else {
            usage(rank);
            MPI_Finalize();
            return 2;
        }
    }
    if (i != argc || iters < 1 || warmup < 0 || window < 1 || window > MAX_WINDOW || max < 1) {
        usage(rank);
        MPI_Finalize();
        return 2;
    }

    int all = !strcmp(test, "all");
    int pt2pt = all || !strcmp(test, "latency") || !strcmp(test, "bw");

    if (!pt2pt && strcmp(test, "allreduce")) {
        usage(rank);
        MPI_Finalize();
        return 2;
    }
    if (pt2pt) {
        if (nranks < 2) {
            if (rank == 0)
                fprintf(stderr, "fabric_mpi_bench: %s needs at least 2 ranks\n", test);
            MPI_Finalize();
            return 2;
        }
        /* Like OSU, every message of a window uses the same buffer. */
        buf = malloc(max);
        if (!buf) {
            fprintf(stderr, "fabric_mpi_bench: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        memset(buf, 'a', max);
        if (all || !strcmp(test, "latency"))
            rc |= run_latency(rank, max, iters, warmup, buf);
        if (all || !strcmp(test, "bw"))
            rc |= run_bandwidth(rank, max, iters, warmup, window, buf);
        free(buf);
    }
    if (all || !strcmp(test, "allreduce"))
        rc |= run_allreduce(rank, nranks, max, iters, warmup);
    MPI_Finalize();
    return rc;
}
