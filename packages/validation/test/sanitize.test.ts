import { encodeHtml, sanitize, stripScriptPatterns, stripSqlKeywords } from '@trivium/validation'
import t from 'tap'

t.test('step 1: whole-word, case-insensitive SQL keywords are removed', async (t) => {
  for (const kw of [
    'SELECT',
    'INSERT',
    'UPDATE',
    'DELETE',
    'DROP',
    'CREATE',
    'ALTER',
    'EXEC',
    'UNION',
    'SCRIPT',
  ]) {
    t.equal(stripSqlKeywords(`a ${kw} b`), 'a  b', kw)
    t.equal(stripSqlKeywords(`a ${kw.toLowerCase()} b`), 'a  b', kw.toLowerCase())
    t.equal(stripSqlKeywords(`${kw[0]}${kw.slice(1).toLowerCase()}`), '', 'mixed case')
  }
  t.equal(stripSqlKeywords('1; DROP TABLE users'), '1;  TABLE users')
  // Not whole words: kept.
  t.equal(
    stripSqlKeywords('selected dropdown updates execute creates'),
    'selected dropdown updates execute creates',
  )
  t.equal(stripSqlKeywords('reunion subscript'), 'reunion subscript')
  t.equal(stripSqlKeywords('select_all'), 'select_all', 'underscore is a word character')
  t.equal(stripSqlKeywords('select-all'), '-all', 'hyphen is a boundary')
})

t.test('step 2: script patterns and on<word>= handlers are removed', async (t) => {
  t.equal(stripScriptPatterns('<script'), '')
  t.equal(stripScriptPatterns('<SCRIPT src=x>'), ' src=x>')
  t.equal(stripScriptPatterns('href="javascript:alert(1)"'), 'href="alert(1)"')
  t.equal(stripScriptPatterns('JavaScript:x'), 'x')
  t.equal(stripScriptPatterns('<img src=x onerror=alert(1)>'), '<img src=x alert(1)>')
  t.equal(stripScriptPatterns('<body onLoad = "x">'), '<body  "x">')
  t.equal(stripScriptPatterns('<img/onclick=y>'), '<img/y>')
  t.equal(stripScriptPatterns('<iframe src=x>'), ' src=x>')
  t.equal(stripScriptPatterns('<OBJECT data=x>'), ' data=x>')
  t.equal(stripScriptPatterns('<embed src=x>'), ' src=x>')
  t.equal(
    stripScriptPatterns('button=1 bonus=2 on=3'),
    'button=1 bonus=2 on=3',
    'on must start a word and have a word after it',
  )
  t.equal(stripScriptPatterns('online'), 'online', 'no = after it')
})

t.test('step 3: & < > " and \' are HTML-encoded, & first', async (t) => {
  t.equal(encodeHtml(`& < > " '`), '&amp; &lt; &gt; &quot; &#x27;')
  t.equal(encodeHtml('&lt;'), '&amp;lt;')
})

t.test('sanitize: the steps in the spec order, then trim', async (t) => {
  // <script>: step 1 removes the whole word "script" first, leaving "<>", which step 3 encodes.
  t.equal(sanitize('<script>'), '&lt;&gt;')
  t.equal(sanitize('<script>alert("x")</script>'), '&lt;&gt;alert(&quot;x&quot;)&lt;/&gt;')
  // "<scripts": not a whole word for step 1, so step 2 removes "<script", leaving "s".
  t.equal(sanitize('<scripts>'), 's&gt;')
  t.equal(sanitize('  hello world  '), 'hello world')
  t.equal(sanitize('\n\t SELECT * FROM users \t'), '* FROM users', 'trimmed after removal')
  t.equal(sanitize(`Tom & Jerry's "show"`), 'Tom &amp; Jerry&#x27;s &quot;show&quot;')
  t.equal(
    sanitize('<a href="javascript:alert(1)" onclick="x()">hi</a>'),
    '&lt;a href=&quot;alert(1)&quot; &quot;x()&quot;&gt;hi&lt;/a&gt;',
  )
  t.equal(sanitize('<iframe src="//evil">'), 'src=&quot;//evil&quot;&gt;')
  t.equal(sanitize("1' UNION SELECT password FROM users --"), '1&#x27;   password FROM users --')
  // Order matters: removal runs before encoding, so encoded input is not decoded and re-removed,
  // and entities produced by step 3 are never matched by step 2.
  t.equal(
    sanitize('&lt;script&gt;'),
    '&amp;lt;&amp;gt;',
    'the word script between entities is removed by step 1',
  )
  // One pass each: a removal can leave a pattern behind, but step 3 then encodes its "<".
  t.equal(sanitize('<scr<scriptipt>'), '&lt;script&gt;')
  t.equal(sanitize(''), '')
  t.throws(() => sanitize(42 as unknown as string), TypeError)
})
