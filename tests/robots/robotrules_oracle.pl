#!/usr/bin/perl
# Verdicts of WWW::RobotRules (Perl's libwww), the reference robotgate's
# classic dialect is tested against.  Only core modules besides it (and URI,
# which it needs).
#
# Reads jobs from stdin until EOF.  A job is a line "<agents> <urls>\n"
# followed by 2 + agents + urls fields, each "<byte length>\n<UTF-8 bytes>":
# the robots.txt URL, the agent names, the URLs to check, the robots.txt text.
# For each agent it prints one line with one character per URL: "1" allowed,
# "0" disallowed, "E" anything else (such as -1, "robots.txt not known").
#
# Text is passed already decoded (robotgate's decoding) and decoded here as
# strict UTF-8, so both sides see the same characters, and WWW::RobotRules
# works on Perl character strings as it does behind LWP's decoded_content.
use strict;
use warnings;
use Encode ();
use URI ();
use WWW::RobotRules;

$SIG{__WARN__} = sub { };    # URI's warnings about odd input are not verdicts

# parse() resolves every Disallow value with URI->new_abs, again for each
# agent: that is most of the run time.  new_abs is a pure function of its two
# strings and WWW::RobotRules only reads the URI it returns (scheme, host,
# port, path_query), so the results are remembered for the current file.
my %new_abs;
{
    no warnings 'redefine';
    my $original = \&URI::new_abs;
    *URI::new_abs = sub { $new_abs{"$_[1]\0$_[2]"} //= $original->(@_) };
}
binmode STDIN;
binmode STDOUT;
$| = 0;

sub field {
    my $len = <STDIN>;
    die "truncated input\n" unless defined $len;
    chomp $len;
    die "bad field length '$len'\n" unless $len =~ /^\d+$/;
    my $buf = '';
    while (length($buf) < $len) {
        my $got = read(STDIN, $buf, $len - length($buf), length($buf));
        die "truncated field\n" unless $got;
    }
    return Encode::decode('UTF-8', $buf, Encode::FB_CROAK());
}

my %robots;    # one WWW::RobotRules object per agent name
while (defined(my $head = <STDIN>)) {
    my ($n_agents, $n_urls) = $head =~ /^(\d+) (\d+)$/ or die "bad job header\n";
    my $robots_url = field();
    my @agents = map { field() } 1 .. $n_agents;
    my @urls   = map { field() } 1 .. $n_urls;
    my $text   = field();
    %new_abs = ();
    for my $agent (@agents) {
        my $rules = $robots{$agent} //= WWW::RobotRules->new($agent);
        $rules->parse($robots_url, $text);
        my $line = '';
        for my $url (@urls) {
            my $v = $rules->allowed($url);
            $line .= $v eq '1' ? '1' : $v eq '0' ? '0' : 'E';
        }
        print $line, "\n";
    }
}
