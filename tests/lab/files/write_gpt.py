"""Write an empty GPT (protective MBR, primary and backup headers, empty entry arrays)
to a block device, as sgdisk --clear would, for the lab proof that mkfs refuses a
partitioned namespace. The lab image has no sfdisk/sgdisk; this follows the UEFI
specification's layout (header 92 bytes, 128 entries of 128 bytes, CRC32s).
usage: write_gpt.py DEVICE [SECTOR_SIZE]   (the sector size is read from sysfs when not given)"""

import os
import struct
import sys
import uuid
import zlib

ENTRIES = 128
ENTRY_SIZE = 128


def header(sector, my_lba, alt_lba, first, last, disk_guid, entries_lba, entries_crc):
    fields = [b"EFI PART", 0x00010000, 92, 0, 0, my_lba, alt_lba, first, last,
              disk_guid.bytes_le, entries_lba, ENTRIES, ENTRY_SIZE, entries_crc]
    fmt = "<8sIIII QQQQ 16s QII I"
    raw = struct.pack(fmt, *fields)
    crc = zlib.crc32(raw) & 0xFFFFFFFF
    fields[3] = crc
    raw = struct.pack(fmt, *fields)
    return raw + b"\0" * (sector - len(raw))


def write_gpt(device, sector=None):
    if sector is None:
        name = os.path.basename(os.path.realpath(device))
        with open("/sys/class/block/%s/queue/logical_block_size" % name) as handle:
            sector = int(handle.read())
    fd = os.open(device, os.O_RDWR)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        last_lba = size // sector - 1
        entry_sectors = ENTRIES * ENTRY_SIZE // sector
        entries = b"\0" * (ENTRIES * ENTRY_SIZE)
        entries_crc = zlib.crc32(entries) & 0xFFFFFFFF
        disk_guid = uuid.uuid4()
        first_usable = 2 + entry_sectors
        last_usable = last_lba - 1 - entry_sectors
        # Protective MBR: one partition of type 0xEE covering the disk from LBA 1.
        mbr = bytearray(sector)
        part = struct.pack("<B3sB3sII", 0, b"\x00\x02\x00", 0xEE, b"\xff\xff\xff", 1, min(last_lba, 0xFFFFFFFF))
        mbr[446:446 + 16] = part
        mbr[510:512] = b"\x55\xaa"
        writes = [
            (0, bytes(mbr)),
            (1, header(sector, 1, last_lba, first_usable, last_usable, disk_guid, 2, entries_crc)),
            (2, entries),
            (last_lba - entry_sectors, entries),
            (last_lba, header(sector, last_lba, 1, first_usable, last_usable, disk_guid,
                              last_lba - entry_sectors, entries_crc)),
        ]
        for lba, data in writes:
            os.lseek(fd, lba * sector, os.SEEK_SET)
            os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return disk_guid


if __name__ == "__main__":
    print(write_gpt(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None))
