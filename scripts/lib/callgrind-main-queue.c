// A profiling aid for scripts/callgrind, not part of UnlockIT: preloaded into the server and the lock
// fleet while they run under valgrind. Every Swift program with an async `main` parks its main
// thread in libdispatch's dispatch_main(), which ends that thread with pthread_exit, and valgrind
// 3.19 (Debian 12's) crashes there ("the 'impossible' happened"). This dispatch_main() keeps the main
// thread and drains the main queue on it instead, the way Foundation's run loop does: wait on the
// queue's eventfd, read it, run what was queued.
#define _GNU_SOURCE
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *message);

void dispatch_main(void) {
    int fd = _dispatch_get_main_queue_handle_4CF();
    for (;;) {
        struct pollfd ready = {.fd = fd, .events = POLLIN, .revents = 0};
        (void)poll(&ready, 1, 100);
        if (ready.revents & POLLIN) {
            uint64_t count;
            (void)!read(fd, &count, sizeof count);
        }
        _dispatch_main_queue_callback_4CF(NULL);
    }
}
