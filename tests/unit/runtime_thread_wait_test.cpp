// The threads' wait primitive (runtime/src/exec/thread_wait.h) and the pool
// on top of it. tests/meson.build builds this twice, with
// thread_wait_futex.cpp (Linux, Android) and with thread_wait_condvar.cpp
// (Apple systems), so the implementation Apple builds use runs here too.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <pthread.h>
#include <string.h>

#include "exec/thread_pool.h"
#include "exec/thread_wait.h"

namespace {

constexpr uint32_t kRounds = 20000;

// Two threads take turns on one word, always sleeping (never spinning)
// until it is their turn: a lost wake-up hangs the test.
struct PingPong {
  alignas(64) uint32_t word;
};

struct Player {
  PingPong* game;
  uint32_t parity;  // this player moves when word % 2 == parity
};

void* Play(void* arg) {
  Player* player = (Player*)arg;
  uint32_t* word = &player->game->word;
  for (uint32_t i = 0; i < kRounds; ++i) {
    for (;;) {
      uint32_t seen = __atomic_load_n(word, __ATOMIC_SEQ_CST);
      if (seen % 2 == player->parity) break;
      kiln_thread_wait(word, seen);
    }
    __atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST);
    kiln_thread_wake(word, 1);
  }
  return NULL;
}

void CountTask(void* context, uint32_t worker_index) {
  ((uint32_t*)context)[worker_index] += 1;  // one writer per slot
}

}  // namespace

TEST_CASE("thread_wait: returns at once when the word already differs") {
  uint32_t word = 5;
  kiln_thread_wait(&word, 4);  // would sleep forever if it compared wrongly
  kiln_thread_wake(&word, 1);  // nobody sleeps: a no-op
  CHECK(word == 5);
}

TEST_CASE("thread_wait: two threads alternate 20000 times, sleeping every turn") {
  PingPong game = {};
  Player players[2] = {{&game, 0}, {&game, 1}};
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) REQUIRE(pthread_create(&threads[i], NULL, Play, &players[i]) == 0);
  for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
  CHECK(game.word == 2 * kRounds);
}

TEST_CASE("thread_wait: pools run every task on every worker, in step (a barrier after each)") {
  // 2 threads fit this machine's cores and mostly spin; 4 oversubscribe
  // them, so waiting workers and the caller go to sleep.
  const uint32_t cases[2][2] = {{2, 5000}, {4, 300}};
  for (const auto& c : cases) {
    kiln_thread_pool_options_t options;
    memset(&options, 0, sizeof(options));
    options.thread_count = c[0];
    kiln_thread_pool_t* pool = NULL;
    kiln_status_t status = kiln_thread_pool_create(&options, &pool);
    REQUIRE_MESSAGE(status == NULL, kiln_status_message(status));
    uint32_t calls[4] = {};
    for (uint32_t i = 1; i <= c[1]; ++i) {
      kiln_thread_pool_run(pool, CountTask, calls);
      for (uint32_t w = 0; w < c[0]; ++w) {
        if (calls[w] != i) FAIL("worker " << w << " out of step at task " << i << " of " << c[0] << " threads");
      }
    }
    kiln_thread_pool_free(pool);
  }
}
