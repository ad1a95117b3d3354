/* version.h — the one place the version is written. */
#ifndef CUDALAB_VERSION_H
#define CUDALAB_VERSION_H
#define CUDALAB_VERSION "0.1.0"
#endif
