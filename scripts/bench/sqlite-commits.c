/* A small SQLite load generator (issue 31): THREADS threads, each with its own
 * connection to DB in WAL mode with synchronous=FULL, commit one transaction of
 * one 1 KiB insert after another for SECONDS. Each commit's latency (from BEGIN
 * IMMEDIATE to the end of COMMIT, so waiting for the other writer's lock counts,
 * as it would for an application, which retries on SQLITE_BUSY) is written to LOG,
 * a line a commit: its µs, then the µs of them spent getting the write lock
 * (BEGIN IMMEDIATE: SQLite's busy handler sleeping while the other writer holds
 * it, no file call of this thread's).
 * Prints the commits made. `check DB` prints the rows in the table and SQLite's
 * integrity_check. Not part of oslab: a program of the kind a user runs, on the
 * system's libsqlite3, to put under the governor.
 * Build: cc -O2 -pthread -o sqlite-commits sqlite-commits.c -lsqlite3 */
#include <sqlite3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 2
#define PAYLOAD 1024

static const char *db_path;
static double seconds;

struct worker {
  int id;
  long commits;
  long cap;
  unsigned *latency_us;
  unsigned *lock_us;
  const char *error;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int open_db(sqlite3 **db) {
  if (sqlite3_open(db_path, db) != SQLITE_OK)
    return -1;
  sqlite3_busy_timeout(*db, 60000);
  return sqlite3_exec(*db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", 0, 0, 0) ==
                 SQLITE_OK
             ? 0
             : -1;
}

/* sqlite3_errmsg's text lives only as long as its connection */
static const char *kept(sqlite3 *db) { return strdup(sqlite3_errmsg(db)); }

static void *work(void *arg) {
  struct worker *w = arg;
  sqlite3 *db;
  sqlite3_stmt *insert;
  if (open_db(&db) != 0 ||
      sqlite3_prepare_v2(db, "INSERT INTO commits(thread, payload) VALUES (?, ?)", -1, &insert,
                         0) != SQLITE_OK) {
    w->error = "cannot open the database";
    return 0;
  }
  unsigned char payload[PAYLOAD];
  unsigned seed = 12345u + w->id;
  double end = now_s() + seconds;
  while (now_s() < end) {
    for (int i = 0; i < PAYLOAD; i++)
      payload[i] = (unsigned char)rand_r(&seed);
    double t0 = now_s();
    /* as an application would: a writer that finds the lock held past the busy
     * timeout (the other's commit stuck behind the device) tries again */
    int rc;
    while ((rc = sqlite3_exec(db, "BEGIN IMMEDIATE", 0, 0, 0)) == SQLITE_BUSY)
      ;
    if (rc != SQLITE_OK) {
      w->error = kept(db);
      break;
    }
    double locked = now_s();
    sqlite3_bind_int(insert, 1, w->id);
    sqlite3_bind_blob(insert, 2, payload, PAYLOAD, SQLITE_STATIC);
    if (sqlite3_step(insert) != SQLITE_DONE || sqlite3_exec(db, "COMMIT", 0, 0, 0) != SQLITE_OK) {
      w->error = kept(db);
      break;
    }
    sqlite3_reset(insert);
    if (w->commits == w->cap) {
      w->cap = w->cap ? w->cap * 2 : 65536;
      /* on failure the old arrays stay whole: main still prints what was made */
      unsigned *latency = realloc(w->latency_us, w->cap * sizeof *w->latency_us);
      if (latency)
        w->latency_us = latency;
      unsigned *lock = latency ? realloc(w->lock_us, w->cap * sizeof *w->lock_us) : 0;
      if (lock)
        w->lock_us = lock;
      if (!latency || !lock) {
        w->error = "out of memory";
        break;
      }
    }
    w->lock_us[w->commits] = (unsigned)((locked - t0) * 1e6 + 0.5);
    w->latency_us[w->commits++] = (unsigned)((now_s() - t0) * 1e6 + 0.5);
  }
  sqlite3_finalize(insert);
  sqlite3_close(db);
  return 0;
}

static int check(void) {
  sqlite3 *db;
  sqlite3_stmt *s;
  if (open_db(&db) != 0)
    return 1;
  long rows = -1;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM commits", -1, &s, 0) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    rows = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  printf("rows %ld\n", rows);
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, 0) != SQLITE_OK)
    return 1;
  while (sqlite3_step(s) == SQLITE_ROW)
    printf("integrity %s\n", (const char *)sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return rows < 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "check") == 0) {
    db_path = argv[2];
    return check();
  }
  if (argc != 4 || (seconds = atof(argv[2])) <= 0) {
    fprintf(stderr, "usage: %s DB SECONDS LOG | %s check DB\n", argv[0], argv[0]);
    return 2;
  }
  db_path = argv[1];
  sqlite3 *db;
  if (open_db(&db) != 0 ||
      sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS commits(id INTEGER PRIMARY KEY, thread INT, payload BLOB)",
                   0, 0, 0) != SQLITE_OK) {
    fprintf(stderr, "%s: %s\n", db_path, sqlite3_errmsg(db));
    return 1;
  }
  pthread_t t[THREADS];
  struct worker w[THREADS];
  memset(w, 0, sizeof w);
  for (int i = 0; i < THREADS; i++) {
    w[i].id = i;
    pthread_create(&t[i], 0, work, &w[i]);
  }
  long commits = 0;
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], 0);
    commits += w[i].commits;
    if (w[i].error) {
      fprintf(stderr, "thread %d: %s\n", i, w[i].error);
      failed = 1;
    }
  }
  sqlite3_close(db);
  FILE *log = fopen(argv[3], "w");
  if (!log) {
    perror(argv[3]);
    return 1;
  }
  for (int i = 0; i < THREADS; i++)
    for (long j = 0; j < w[i].commits; j++)
      fprintf(log, "%u %u\n", w[i].latency_us[j], w[i].lock_us[j]);
  fclose(log);
  printf("commits %ld\n", commits);
  return failed;
}
