<?php
// Replies to acquire with the wall clock it reads (time(), seed 000's call, in ms).
while (($line = fgets(STDIN)) !== false) {
    $f = explode(' ', trim($line));
    if ($f[0] === 'hello') echo "hello 1 name=clock-php\n";
    if ($f[0] === 'acquire') echo 'ok ' . (time() * 1000) . "\n";
    fflush(STDOUT);
}
