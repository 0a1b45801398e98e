/*
 * Replay driver for fuzz targets built without libFuzzer (gcc presets): feeds every file of
 * the corpus directories (or the files) named on the command line to LLVMFuzzerTestOneInput
 * once. A crash or a sanitizer report fails the test; a clean pass prints how many inputs ran.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    uint8_t *data = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *grown = realloc(data, cap);
            if (grown == NULL) {
                free(data);
                fclose(f);
                return -1;
            }
            data = grown;
        }
        size_t n = fread(data + size, 1, cap - size, f);
        if (n == 0) {
            break;
        }
        size += n;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

static int replay_path(const char *path, int *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such corpus: %s\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (replay_file(path) != 0) {
            return -1;
        }
        (*count)++;
        return 0;
    }
    DIR *dir = opendir(path);
    if (dir == NULL) {
        return -1;
    }
    struct dirent *entry;
    int rc = 0;
    while (rc == 0 && (entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') {
            continue;
        }
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", path, entry->d_name);
        rc = replay_path(child, count);
    }
    closedir(dir);
    return rc;
}

int main(int argc, char **argv)
{
    int count = 0;
    for (int i = 1; i < argc; i++) {
        if (replay_path(argv[i], &count) != 0) {
            return 1;
        }
    }
    if (count == 0) {
        fprintf(stderr, "replay: the corpus is empty\n");
        return 1;
    }
    printf("replay: %d inputs ran without a fault\n", count);
    return 0;
}
