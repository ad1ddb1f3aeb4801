import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes `dir`/filler until its filesystem refuses more (ENOSPC), in 1 MiB and then 4 KiB pieces so
 * that hardly a page is left; answers the file's path (delete it to free the space). For the full-disk
 * test and bench on a small tmpfs.
 */
export function fillFilesystem(dir: string): string {
  const filler = join(dir, 'filler');
  const fd = openSync(filler, 'w');
  try {
    for (const size of [1024 * 1024, 4096]) {
      const chunk = Buffer.alloc(size, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
  return filler;
}
