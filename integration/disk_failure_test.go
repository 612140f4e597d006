package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestFailingDiskLosesNoAcknowledgedRecord: the partitions' disk starts
// failing its writes under load. The broker's partitions are on ext4 on a
// loop device whose backing file lies on a small tmpfs; filling the tmpfs
// makes every write to a block the file has not yet stored fail in the
// block layer, as a dying disk's would, so an fsync of the appended data
// fails for real. The broker must acknowledge nothing it could not make
// durable: its partitions fail, the broker stops by itself (as Kafka's
// does with its log directories offline), the disk is repaired (space
// given back, e2fsck), and
// after the restart every acknowledged record is read back once, at its
// offset, and nothing a consumer saw vanished (internal/ledger). Run on
// ext4 with its journal and without one, since they report a failed write
// to syncfs differently (hotlog.SyncfsErrors), and with the broker's disk
// journal (--disk-journal-bytes), whose failed fdatasync stops the broker
// and whose files the restart replays.
//
// The loop device takes one 4 KiB block per request. A loop device
// completes a write request that its backing file took only part of as a
// success (the tail is dropped without an error), which a disk does not:
// with merged requests, a request straddling the moment the tmpfs filled
// lost its second block silently, and the drill lost one to five
// acknowledged records in one run of four. A kernel trace showed the
// 8 KiB request holding the lost page complete with status 0 just before
// the first failed one; with one-block requests nothing was lost in 16
// runs of both variants.
func TestFailingDiskLosesNoAcknowledgedRecord(t *testing.T) {
	t.Parallel()
	needFailingDisk(t)
	for _, c := range []struct {
		name, features string
		diskJournal    bool
	}{{"journaled", "has_journal", false}, {"no-journal", "^has_journal", false}, {"disk-journal", "has_journal", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			failingDiskDrill(t, c.features, c.diskJournal)
		})
	}
}

// needFailingDisk skips the test, saying why, where a failing disk
// cannot be built.
func needFailingDisk(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to attach and mount a loop device")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "e2fsck", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian's mount and e2fsprogs) to build a failing disk", tool)
		}
	}
}

func failingDiskDrill(t *testing.T, features string, diskJournal bool) {
	dataDir := t.TempDir()
	partitions := filepath.Join(dataDir, "partitions")
	d := newFailingDisk(t, partitions, features)

	extra := []string{"--bucket", "file://" + t.TempDir()}
	if diskJournal {
		extra = append(extra, "--disk-journal-bytes", "1048576")
	}
	s := &server{t: t, dataDir: dataDir, kafka: freePort(t), admin: freePort(t), meta: freePort(t), extra: extra}
	s.launch()
	t.Cleanup(s.stop) // before waitReady, which may fail the test
	s.waitReady()
	const topic = "failing"
	createTopic(t, s, topic, 8, nil)
	seeds := []string{s.kafka}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	led, load := startLedgerLoad(t, seeds, topic, time.Millisecond)
	eventually(t, "1,000 records acknowledged and 500 consumed before the disk fails", func() bool {
		sum := led.Summary(nil)
		return sum.Acked >= 1000 && sum.Consumed >= 500
	})
	d.fill()
	waitStoppedOnDiskFailure(t, s)
	before := led.Summary(nil).Acked

	d.repair()
	s.restart()
	eventually(t, "1,000 more acknowledged after the repair", func() bool { return led.Summary(nil).Acked >= before+1000 })
	if diskJournal && !regexp.MustCompile(`replayed the disk journal of the last run.* entries=[1-9]`).MatchString(s.log.String()) {
		t.Fatalf("the restart replayed no disk journal entries: the drill did not run with one\n%s", s.log)
	}
	checkLedger(ctx, t, led, load, seeds, topic, before+1000)
}

// TestBrokerWithAFailedDiskLeavesItsPartitionsToTheOthers: of three
// brokers, each partition on all three (min.insync.replicas 2), the first
// has its partitions on a disk that starts failing under load. It stops,
// its controlled shutdown moving the leadership of what it led, and the
// producers go on with the other two, as with Kafka's broker, which halts
// when its log directories are offline. Once its disk is repaired it comes
// back and catches up; no acknowledged record is lost or duplicated.
func TestBrokerWithAFailedDiskLeavesItsPartitionsToTheOthers(t *testing.T) {
	t.Parallel()
	needFailingDisk(t)
	var disk *failingDisk
	servers := startClusterFlags(t, 3, 3, func(i int, s *server) {
		if i == 0 {
			disk = newFailingDisk(t, filepath.Join(s.dataDir, "partitions"), "has_journal")
		}
	}, nil)
	failing := servers[0]
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClientSeeds(t, seeds[1:2]))
	const topic = "failing"
	replicatedTopic(ctx, t, admin, topic, 8, nil)

	led, load := startLedgerLoad(t, seeds, topic, 2*time.Millisecond)
	eventually(t, "1,000 records acknowledged before the disk fails", func() bool { return led.Summary(nil).Acked >= 1000 })
	disk.fill()
	waitStoppedOnDiskFailure(t, failing)
	if !strings.Contains(failing.log.String(), "controlled shutdown: leadership moved to other replicas") {
		t.Fatalf("the broker stopped without moving its leadership away first:\n%s", failing.log)
	}
	waitPartitions(ctx, t, admin, topic, "led by the other two", func(p kadm.PartitionDetail) bool { return p.Leader == 2 || p.Leader == 3 })
	stopped := led.Summary(nil).Acked
	eventually(t, "1,000 more acknowledged with the failed broker down", func() bool { return led.Summary(nil).Acked >= stopped+1000 })

	disk.repair()
	failing.restart()
	waitPartitions(ctx, t, admin, topic, "back to ISR 3", func(p kadm.PartitionDetail) bool { return len(p.ISR) == 3 })
	back := led.Summary(nil).Acked
	eventually(t, "1,000 more acknowledged after the repair", func() bool { return led.Summary(nil).Acked >= back+1000 })
	checkLedger(ctx, t, led, load, seeds, topic, back+1000)
}

// waitStoppedOnDiskFailure waits for s to stop by itself once its disk
// failed, with an error that says so and exit status 3, which the
// systemd unit does not restart on.
func waitStoppedOnDiskFailure(t *testing.T, s *server) {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		t.Fatalf("the broker did not stop within a minute of its disk failing:\n%s", s.log)
	}
	const want = "a partition's log failed after an I/O error on the data directory"
	if code := s.cmd.ProcessState.ExitCode(); code != 3 || !strings.Contains(s.log.String(), want) {
		t.Fatalf("the broker stopped with exit code %d; want 3 (its disk failed) and an error saying %q:\n%s", code, want, s.log)
	}
}

// failingDisk is an ext4 file system on a loop device whose backing file
// is sparse on a tmpfs smaller than it: writes succeed while the tmpfs has
// room, and fail once fill has taken it.
type failingDisk struct {
	t                   *testing.T
	mountPoint, backing string
	device              string
	filler              string
}

func newFailingDisk(t *testing.T, mountPoint, features string) *failingDisk {
	t.Helper()
	backing := t.TempDir()
	d := &failingDisk{t: t, mountPoint: mountPoint, backing: backing, filler: filepath.Join(backing, "filler")}
	// The inode tables and the journal are written when the file system
	// is made (not lazily), so that what fails later is the writes of
	// appended data and of whatever else the file system allocates anew.
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", backing).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to build a failing disk on (mount: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { d.undo("umount", backing) })
	image := filepath.Join(backing, "disk")
	d.run("truncate", "-s", "1G", image)
	out, err := exec.Command("losetup", "--find", "--show", image).CombinedOutput()
	if err != nil {
		t.Skipf("no loop device to build a failing disk on (losetup: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	d.device = strings.TrimSpace(string(out))
	t.Cleanup(func() { d.undo("losetup", "--detach", d.device) })
	// One block per request: a request the full tmpfs takes only part of
	// would complete as a success (see the test's comment).
	limit := filepath.Join("/sys/block", filepath.Base(d.device), "queue", "max_sectors_kb")
	if err := os.WriteFile(limit, []byte("4"), 0o644); err != nil {
		t.Skipf("cannot limit the loop device to one block per request, without which it drops writes silently: %v", err)
	}
	d.run("mkfs.ext4", "-q", "-O", features, "-E", "lazy_itable_init=0,lazy_journal_init=0", d.device)
	if err := os.Mkdir(mountPoint, 0o755); err != nil {
		t.Fatal(err)
	}
	d.mount()
	// Registered once, after the loop device's detach, so it runs first;
	// repair unmounts and mounts again in between. Fails quietly when
	// repair left it unmounted.
	t.Cleanup(func() { exec.Command("umount", d.mountPoint).Run() })
	return d
}

func (d *failingDisk) mount() {
	d.t.Helper()
	d.run("mount", d.device, d.mountPoint)
}

// fill takes the rest of the tmpfs, so the next write to a block of the
// image not yet stored fails.
func (d *failingDisk) fill() {
	d.t.Helper()
	f, err := os.Create(d.filler)
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				d.t.Fatal(err)
			}
			return
		}
	}
}

// repair is what an operator does once the broker is down: unmount, give
// the disk its room back, check the file system, mount it again.
func (d *failingDisk) repair() {
	d.t.Helper()
	d.run("umount", d.mountPoint)
	if err := os.Remove(d.filler); err != nil {
		d.t.Fatal(err)
	}
	// e2fsck exits 1 when it fixed errors, 2 when it fixed them and a
	// reboot is advised (meaningless for an unmounted disk).
	out, err := exec.Command("e2fsck", "-f", "-y", d.device).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() <= 2) {
		d.t.Fatalf("e2fsck: %v: %s", err, out)
	}
	d.t.Logf("e2fsck after the failure: %s", strings.TrimSpace(string(out)))
	d.mount()
}

// undo runs a cleanup command, reporting a failure without stopping the
// other cleanups.
func (d *failingDisk) undo(name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		d.t.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

func (d *failingDisk) run(name string, args ...string) {
	d.t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		d.t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}
