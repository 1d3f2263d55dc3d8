/* Files of the CLI's outputs and inputs: where a path's folder is, whether it can be written, whether two spellings
 * name one file, writing without leaving a truncated file, and a checkpoint's name and identity. */
#ifndef ECO_CLI_FILES_H
#define ECO_CLI_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "eco/err.h"

/* Writes path's folder into dir ("." when it has none, "/" for the root) and returns its last component. */
const char *eco_path_split(const char *path, char *dir, size_t cap);
/* Whether path can be written as a file (its folder exists and is writable; it is not a folder); why[] if not. */
bool eco_file_writable(const char *path, char *why, size_t cap);
/* Whether two output paths name one regular file ("./e.json" and "e.json"); devices and pipes never clash. */
bool eco_same_output(const char *a, const char *b);
/* Writes data to path through a new temporary file in its folder, renamed over it (a symlink's target is
 * replaced, an existing file keeps its mode): a full disk or a signal leaves the old file whole. A device or
 * pipe is written directly. On failure says why on stderr, prefixed by cmd. */
bool eco_write_atomically(const char *cmd, const char *path, const char *data, size_t len);
/* SHA-256 of the manifest "<sha256>  <name>\n" (sha256sum's format) of a checkpoint folder's files above, in
 * byte order of their names; of the file itself when path is one file. Progress on stderr unless quiet. */
eco_err eco_checkpoint_sha256(const char *path, bool quiet, char out[65]);
/* A checkpoint's name for the dataset: its config's _name_or_path when that is a hub id ("Qwen/Qwen2.5-7B"),
 * else the last component of that path or of the folder the weights are in (never "." or a local path). */
void eco_checkpoint_name(const char *weights_path, const char *name_or_path, char *out, size_t cap);

#endif
