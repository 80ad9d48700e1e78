"""Screenshots of one element of a page each, in headless chromium, over the DevTools protocol on a pipe.

``chromium --screenshot`` takes the window from the top of the page: a view further down (the fleet table, a node's
section) comes out blank even when the address names it (``#n20``), as chromium paints nothing scrolled in that mode.
The DevTools protocol's ``Page.captureScreenshot`` takes any rectangle of the laid-out page, so each view is cut out
by its element's own box. ``--remote-debugging-pipe`` speaks it over file descriptors 3 (to chromium) and 4 (from
it), one JSON message each, ended by a NUL byte: no port, no websocket library.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import zlib

FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync', '--hide-scrollbars']
# The element's box in page coordinates (not the viewport's), so a clip reaches a view below the first screen.
BOX = ("(function(){var e=document.querySelector(%s);if(!e)return null;var r=e.getBoundingClientRect();"
       "return {x:r.left+scrollX,y:r.top+scrollY,width:r.width,height:r.height}})()")


class Page:
    """One chromium with one page; ``with Page(chromium, profile, url, width) as page: page.shoot(selector, path)``."""

    def __init__(self, chromium, profile, url, width=1200, height=900, domains=()):
        """``domains``: DevTools domains to enable before the page is opened (``Performance`` counts from there)."""
        self._chromium, self._profile, self._url, self._size = chromium, profile, url, (width, height)
        self._domains = domains
        self._id, self._buffer, self._events, self._session = 0, b'', [], None

    def __enter__(self):
        to_chromium, self._write = os.pipe()
        self._read, from_chromium = os.pipe()

        def on_3_and_4():
            # dup first: a pipe end may already be 3 or 4, and dup2 onto itself would leave it close-on-exec.
            read, write = os.dup(to_chromium), os.dup(from_chromium)
            os.dup2(read, 3)
            os.dup2(write, 4)

        self._process = subprocess.Popen(  # pylint: disable=subprocess-popen-preexec-fn
            [self._chromium] + FLAGS + ['--user-data-dir=%s' % self._profile,
                                        '--remote-debugging-pipe'],
            preexec_fn=on_3_and_4, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chromium)
        os.close(from_chromium)
        try:
            target = self._send('Target.createTarget', url='about:blank')['targetId']
            self._session = self._send('Target.attachToTarget', targetId=target, flatten=True)['sessionId']
            for domain in ('Page',) + tuple(self._domains):
                self._send(domain + '.enable')
            width, height = self._size
            self._send('Emulation.setDeviceMetricsOverride', width=width, height=height, deviceScaleFactor=1,
                       mobile=False)
            self._send('Page.navigate', url=self._url)
            self._wait('Page.loadEventFired')
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        try:
            if self._process.poll() is None:
                self._session = None
                self._send('Browser.close')
        except (OSError, RuntimeError):
            pass
        finally:
            os.close(self._write)
            os.close(self._read)
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def _message(self):
        while b'\0' not in self._buffer:
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError('chromium closed the DevTools pipe')
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b'\0', 1)
        return json.loads(message)

    def _send(self, method, **params):
        self._id += 1
        message = {'id': self._id, 'method': method, 'params': params}
        if self._session:
            message['sessionId'] = self._session
        os.write(self._write, json.dumps(message).encode('utf-8') + b'\0')
        while True:
            reply = self._message()
            if reply.get('id') == self._id:
                if 'error' in reply:
                    raise RuntimeError('%s: %s' % (method, reply['error']))
                return reply['result']
            self._events.append(reply)

    def _wait(self, method):
        while True:
            for index, event in enumerate(self._events):
                if event.get('method') == method:
                    return self._events.pop(index)
            self._events.append(self._message())

    def evaluate(self, expression, await_promise=False):
        """The expression's value in the page; with ``await_promise``, the value its promise resolves to."""
        return self._send('Runtime.evaluate', expression=expression, returnByValue=True,
                          awaitPromise=await_promise)['result'].get('value')

    @property
    def pid(self):
        """The browser's process id (its renderer and other processes are its descendants)."""
        return self._process.pid

    def metrics(self):
        """{name: value} of ``Performance.getMetrics`` (``domains=('Performance',)``): e.g. ``TaskDuration``, the
        seconds the page's main thread spent running tasks (parsing, style, layout, script) since it was enabled."""
        return {metric['name']: metric['value'] for metric in self._send('Performance.getMetrics')['metrics']}

    def box(self, selector):
        """The element's box in page coordinates, or None when the page has no such element."""
        return self.evaluate(BOX % json.dumps(selector))

    def shoot(self, path, selectors, max_height=4000):
        """A PNG of the smallest box holding every selector's element (page coordinates), cut at ``max_height``
        pixels; returns the clip, or fails an assertion naming the selector the page lacks."""
        boxes = [self.box(selector) for selector in selectors]
        missing = [selector for selector, box in zip(selectors, boxes) if not box or not box['height']]
        assert not missing, 'the page has no (visible) %s' % missing
        left, top = min(box['x'] for box in boxes), min(box['y'] for box in boxes)
        right = max(box['x'] + box['width'] for box in boxes)
        bottom = max(box['y'] + box['height'] for box in boxes)
        clip = {'x': left, 'y': top, 'width': right - left, 'height': min(bottom - top, max_height), 'scale': 1}
        data = self._send('Page.captureScreenshot', format='png', captureBeyondViewport=True, clip=clip)['data']
        with open(path, 'wb') as handle:
            handle.write(base64.b64decode(data))
        return clip


def png_facts(path):
    """(width, height, distinct byte values of the pixel data): a blank page has two or three, a rendered view many."""
    with open(path, 'rb') as handle:
        data = handle.read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n', path
    width, height = struct.unpack('>II', data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        length, kind = struct.unpack('>I4s', data[offset:offset + 8])
        if kind == b'IDAT':
            chunks.append(data[offset + 8:offset + 8 + length])
        offset += 12 + length
    return width, height, len(set(zlib.decompress(b''.join(chunks))))
