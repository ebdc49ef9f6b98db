/* SPDX-License-Identifier: MIT */
/*
 * ctl_path.h - the folders of the files a server makes (control socket, NBD socket,
 * log), shared by the command and the plugin.
 */
#ifndef TC_CTL_PATH_H
#define TC_CTL_PATH_H

/*
 * ctl_make_parent - `mkdir -p` of the folder of @path (a file's path, absolute or
 * relative): every missing folder is created with mode 0755; a path with no folder
 * part ("x.sock", "/x.sock") needs none.  Returns 0, or -errno of the mkdir that
 * failed (-ENOTDIR, -EACCES, ...), or -ENOMEM.
 */
int ctl_make_parent(const char *path);

/* ctl_mkdir_p - `mkdir -p @path`: @path and every missing folder above it, mode 0755.
 * Returns 0 (also when it exists), or -errno of the mkdir that failed, or -ENOMEM. */
int ctl_mkdir_p(const char *path);

#endif /* TC_CTL_PATH_H */
