// The only C that UnlockIT sees for MQTT: libmosquitto, and the Linux readiness API
// (epoll, eventfd) the Swift event loop drives many libmosquitto clients with.
// The Swift client lives in Sources/MQTT.
#ifndef UNLOCKIT_CMOSQUITTO_SHIM_H
#define UNLOCKIT_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* libmosquitto 2.0 gives every client a socket pair and writes a byte into it for every packet it
 * queues, to wake mosquitto_loop()'s select(). A client driven by an event loop of its own, as ours
 * are, never reads it (eclipse-mosquitto/mosquitto#3062): each packet costs a system call, the pair
 * fills after a few hundred packets (kernel memory per client), and from then on every write fails
 * and leaves errno at EAGAIN, which a callback that publishes hands back to its caller.
 *
 * This takes the pair away, leaving the client as libmosquitto leaves one whose socketpair() failed:
 * INVALID_SOCKET, which every use of the pair checks. libmosquitto 1.6 and 2.0 keep the pair in the
 * two ints after the client's socket at the start of `struct mosquitto`; they are taken only after
 * checking that they are that pair: right after mosquitto_new() the socket is -1, both are Unix
 * stream sockets, and a byte written to the second arrives at the first. Returns 1 when the pair was
 * taken, 0 when the client was left as it was. Call it right after mosquitto_new(), before the
 * client is used anywhere else. */
static inline int unlockit_mosquitto_detach_socketpair(struct mosquitto *mosq) {
    int major = 0, minor = 0, revision = 0;
    mosquitto_lib_version(&major, &minor, &revision);
    if (!((major == 2 && minor == 0) || (major == 1 && minor == 6))) return 0;
    int *fields = (int *)mosq;
    int reader = fields[1], writer = fields[2];
    if (fields[0] != -1 || reader < 0 || writer < 0 || reader == writer) return 0;
    int sockets[2] = {reader, writer};
    for (int i = 0; i < 2; i++) {
        int domain = 0, type = 0;
        socklen_t length = sizeof(int);
        if (getsockopt(sockets[i], SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || domain != AF_UNIX) return 0;
        length = sizeof(int);
        if (getsockopt(sockets[i], SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) return 0;
    }
    int before = -1, after = -1;
    char probe = 0;
    if (ioctl(reader, FIONREAD, &before) != 0 || write(writer, &probe, 1) != 1) return 0;
    if (ioctl(reader, FIONREAD, &after) != 0 || after != before + 1 || read(reader, &probe, 1) != 1) return 0;
    fields[1] = -1;
    fields[2] = -1;
    close(reader);
    close(writer);
    return 1;
}
#endif
