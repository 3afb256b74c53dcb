// The only C that UnlockIT sees for MQTT: libmosquitto, and the Linux readiness API
// (epoll, eventfd) the Swift event loop drives many libmosquitto clients with.
// The Swift client lives in Sources/MQTT.
#ifndef UNLOCKIT_CMOSQUITTO_SHIM_H
#define UNLOCKIT_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
