/* Unthrottled buffered writes, timed from inside: COUNT pwrite()s of SIZE bytes
 * cycling over the first MiB of FILE, so after the first pass every write lands
 * on a page already in the page cache and nothing waits for the device.
 * The writes go in batches of 10,000, each timed; prints the median batch's
 * nanoseconds per write (a neighbour's burst on a shared host spoils a few
 * batches, not the median) and the mean over all writes of the process's CPU
 * time. Not part of oslab: a program oslab did not write, to time what the
 * governor's interposer adds to a user's writes. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BATCH 10000

static long long now_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s SIZE COUNT FILE\n", argv[0]);
    return 2;
  }
  size_t size = strtoul(argv[1], NULL, 10);
  long count = strtol(argv[2], NULL, 10);
  const size_t region = 1 << 20;
  if (size == 0 || size > region || count < BATCH) {
    fprintf(stderr, "SIZE must be 1..1048576 and COUNT at least %d\n", BATCH);
    return 2;
  }
  int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    perror(argv[3]);
    return 1;
  }
  char *buf = malloc(size);
  long batches = count / BATCH;
  long long *took = malloc(batches * sizeof *took);
  if (!buf || !took)
    return 1;
  memset(buf, 'w', size);
  size_t slots = region / size, slot = 0;
  for (size_t i = 0; i < slots; i++) /* the first pass: pages come into the cache */
    if (pwrite(fd, buf, size, (off_t)(i * size)) != (ssize_t)size) {
      perror("pwrite");
      return 1;
    }
  long long c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (long b = 0; b < batches; b++) {
    long long t0 = now_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < BATCH; i++) {
      if (pwrite(fd, buf, size, (off_t)(slot * size)) != (ssize_t)size) {
        perror("pwrite");
        return 1;
      }
      slot = slot + 1 == slots ? 0 : slot + 1;
    }
    took[b] = now_ns(CLOCK_MONOTONIC) - t0;
  }
  long long c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  qsort(took, batches, sizeof *took, by_value);
  printf("%.1f %.1f\n", (double)took[batches / 2] / BATCH,
         (double)(c1 - c0) / (batches * BATCH));
  close(fd);
  return 0;
}
