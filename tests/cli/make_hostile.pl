#!/usr/bin/perl
# tests/cli/make_hostile.pl: writes the hostile inputs of the robust.* tests (issue 7) to stdout,
# at test time, so that nothing hostile is committed. Perl is part of every Debian system
# (perl-base is essential); CMake strings cannot hold the NUL bytes these files need.
#   make_hostile.pl vocab N         N distinct characters (U+4E00...), UTF-8, then a newline
#   make_hostile.pl controls        verse with ESC colour codes, NUL, BEL and CR inside it
#   make_hostile.pl longline N      one line of N characters, then a short one
#   make_hostile.pl npy SHAPE [K]   a float32 .npy of SHAPE, e.g. "(64,)", all ones with a NaN
#                                   at flat index K if given; a shape with a zero gets no data
use strict;
use warnings;
binmode(STDOUT);
my $mode = shift // die "usage: make_hostile.pl vocab|controls|longline|npy ...\n";
if ($mode eq "vocab") {
  my $n = shift;
  binmode(STDOUT, ":utf8");
  print join("", map { chr(0x4E00 + $_) } 0 .. $n - 1), "\n";
  print join("", map { chr(0x4E00 + $_) } reverse 0 .. $n - 1), "\n";
} elsif ($mode eq "controls") {
  for my $i (1 .. 40) {
    print "Shall I compare thee \e[31mto a summer's\e[0m day?\n";
    print "Thou art\0 more lovely\a and more\r temperate.\n";
  }
} elsif ($mode eq "longline") {
  my $n = shift;
  my @words = ("the ", "quick ", "brown ", "fox ");
  my $line = "";
  $line .= $words[length($line) % 4] while length($line) < $n;
  print substr($line, 0, $n), "\nAnd a short line after it.\n";
} elsif ($mode eq "npy") {
  my ($shape, $nan_at) = @ARGV;
  my $header = "{'descr': '<f4', 'fortran_order': False, 'shape': $shape, }";
  my $total = 10 + length($header) + 1;
  $header .= " " x ((64 - $total % 64) % 64) . "\n";
  print "\x93NUMPY\x01\x00", pack("v", length($header)), $header;
  my $count = 1;
  $count *= $_ for ($shape =~ /(\d+)/g);
  exit 0 if $count == 0 || $shape =~ /\d{10,}/;
  for my $i (0 .. $count - 1) {
    print defined($nan_at) && $i == $nan_at ? "\x00\x00\xc0\x7f" : pack("f<", 1.0);
  }
} else {
  die "make_hostile.pl: unknown mode '$mode'\n";
}
